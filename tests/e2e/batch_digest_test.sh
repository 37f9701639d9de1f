#!/usr/bin/env bash
# Batches are a pure function of (partition, seeds, sampling, seed, epoch, batch index), so the
# bytes a server streams for a fixed request must not change unless the sampling semantics are
# changed on purpose. This test partitions Cora (2 random parts), starts 2 real servers with
# peers reached over the network (rpc: the bulk transport, the default) and then in-process
# (local), streams every part's train split for
# 2 epochs in several sampling configurations (tests/tools/batch_digest.cc) and compares each
# digest with tests/data/golden/cora_batch_digests.txt, recorded before the layering refactor.
# Then the same with isolated peers (--isolated-peers: every remote hop and row over
# the network), without and with the cache of hot remote rows, and over gRPC instead of the bulk
# transport (--peer-transport grpc): the digests must equal rpc's.
# When a change alters batches on purpose, regenerate that file with GRAPHSHARD_UPDATE_GOLDEN=1
# and say why in the commit.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server batch_digest
GOLDEN=$SRC/tests/data/golden/cora_batch_digests.txt

partition_cora "$WORK/cora2"

# start_servers MODE [FLAGS...]: 2 servers with --peer_sampling MODE --peer_features MODE (or,
# for a MODE other than rpc/local, with FLAGS); sets SERVERS.
start_servers() {
  local mode=$1 k
  shift
  local flags=("$@")
  [[ $mode == rpc || $mode == local ]] && flags=(--peer_sampling "$mode" --peer_features "$mode")
  rm -rf "$WORK/registry"
  for k in 0 1; do
    timeout 300 "$BIN/graphshard-server" --partition "$WORK/cora2" --part "$k" \
      --listen 127.0.0.1:0 --registry "$WORK/registry" --threads 2 \
      "${flags[@]}" >"$WORK/server_${mode}_${k}.log" 2>&1 &
  done
  for k in 0 1; do
    wait_for_file "$WORK/registry/part_$k" 60 || { show "$WORK/server_${mode}_${k}.log"; fail "server $k did not register"; }
  done
  SERVERS="$(cat "$WORK/registry/part_0"),$(cat "$WORK/registry/part_1")"
}

stop_servers() {
  local pids
  pids=$(pgrep -f -- "graphshard-server --partition $WORK" || true)
  # shellcheck disable=SC2086
  [[ -z $pids ]] || kill -TERM $pids
  for _ in $(seq 100); do
    [[ -z $(pgrep -f -- "graphshard-server --partition $WORK" || true) ]] && return 0
    sleep 0.1
  done
  fail "servers did not stop within 10 s of SIGTERM"
}

configs=(
  "--fanouts 10,5"
  "--fanouts 5,-1 --batch-size 100 --dtype float16"
  "--fanouts 4,3 --disjoint --dtype bfloat16"
)
: >"$WORK/digests.txt"
for mode in rpc local; do
  start_servers "$mode"
  for cfg in "${configs[@]}"; do
    # shellcheck disable=SC2086
    line=$(timeout 120 "$BIN/batch_digest" --servers "$SERVERS" $cfg | tail -n 1) ||
      fail "batch_digest $cfg (peers $mode) failed"
    echo "$mode $cfg: $line" >>"$WORK/digests.txt"
  done
  stop_servers
done
show "$WORK/digests.txt"

# The rpc servers asked their peers over the bulk transport (the default --peer-transport), so
# the golden digests below are the bulk path's.
for k in 0 1; do
  grep -q "peer calls over the bulk transport at 127.0.0.1:" "$WORK/server_rpc_$k.log" ||
    { show "$WORK/server_rpc_$k.log"; fail "server $k did not ask its peer over the bulk transport"; }
done

# Peers over the network and in-process must give the same batches.
rpc=$(sed -n 's/^rpc \(.*\)$/\1/p' "$WORK/digests.txt")
loc=$(sed -n 's/^local \(.*\)$/\1/p' "$WORK/digests.txt")
[[ $rpc == "$loc" ]] || fail "batches differ between --peer_sampling rpc and local"

# Isolated peers, with and without the cache (filled before streaming: its log line), and asked
# over gRPC instead of the bulk transport (isolated_grpc), give rpc's batches.
for mode in isolated cached isolated_grpc; do
  cache=0
  [[ $mode == cached ]] && cache=64
  transport=bulk
  [[ $mode == isolated_grpc ]] && transport=grpc
  start_servers "$mode" --isolated-peers --peer-cache-mib "$cache" --peer-transport "$transport"
  if [[ $mode == cached ]]; then
    for k in 0 1; do
      for _ in $(seq 200); do
        grep -q "peer cache: part $((1 - k)): .* cached" "$WORK/server_${mode}_${k}.log" && break
        sleep 0.1
      done
      grep -q "peer cache: part $((1 - k)): .* cached" "$WORK/server_${mode}_${k}.log" ||
        { show "$WORK/server_${mode}_${k}.log"; fail "server $k did not fill its cache"; }
    done
  fi
  for cfg in "${configs[@]}"; do
    # shellcheck disable=SC2086
    line=$(timeout 120 "$BIN/batch_digest" --servers "$SERVERS" $cfg | tail -n 1) ||
      fail "batch_digest $cfg (peers $mode) failed"
    echo "$mode $cfg: $line" >>"$WORK/extra_digests.txt"
  done
  stop_servers
  got=$(sed -n "s/^$mode \(.*\)$/\1/p" "$WORK/extra_digests.txt")
  [[ $got == "$rpc" ]] || { show "$WORK/extra_digests.txt"; fail "batches differ between --isolated-peers ($mode) and rpc peers"; }
  if [[ $mode == isolated_grpc ]]; then
    ! grep -q "bulk transport at" "$WORK/server_${mode}_0.log" ||
      fail "--peer-transport grpc still used the bulk transport"
  fi
done
show "$WORK/extra_digests.txt"

if [[ ${GRAPHSHARD_UPDATE_GOLDEN:-0} == 1 ]]; then
  cp "$WORK/digests.txt" "$GOLDEN"
  note "golden digests written to $GOLDEN"
  exit 0
fi
[[ -f $GOLDEN ]] || fail "missing $GOLDEN"
diff -u "$GOLDEN" "$WORK/digests.txt" || fail "batches differ from the recorded ones ($GOLDEN)"
note ok
