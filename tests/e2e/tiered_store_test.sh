#!/usr/bin/env bash
# The tiered feature store (trainer/feature_store.h) with a budget too small for the graph:
# 2 servers + 2 CPU trainers through the launcher, on Cora (homogeneous) and IMDB
# (heterogeneous: movie, director and actor rows), each run three times with the same seed:
#  1. --feature-store server: every batch carries its rows (the reference weights);
#  2. --feature-store device --device-cache-mib 1: the rows the first epoch's batches visit most
#     in a 1 MiB device tier, every other row of this host's parts in the host tier;
#  3. the same with --host-tier none: the rows outside the device tier fetched by id, per batch
#     (the remote tier), asked of this host's servers (any part's rows);
#  4. the same with --remote-rows owner: asked of the servers that own them;
#  5. --host-tier none --host-cache-mib 1: 1 MiB of the other rows' hottest in host memory
#     (the host cache, as for other hosts' parts), the rest fetched per batch: all three tiers.
# Runs 2-5 end with the reference weights bit for bit (same batches, same rows); each rank
# logs what its tiers hold; the JSON summary's feature_tiers shows rows from exactly the tiers
# the run has (device and host, device and remote, or all three), shares that add up to 1 and,
# for the remote tier, bytes fetched over the network. Bad tier flags are refused naming the
# flag, and --device-tier shared on CPU trainers once they start. (The shared tier itself needs
# GPUs with peer access: tests/bench/tiered_store_gpu_check.sh.)
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer

# check_tiers STDOUT STDERR WHICH (host|remote|all): the summary's feature_tiers and the log
# lines.
check_tiers() {
  python3 - "$(tail -n 1 "$1")" "$3" <<'PY' || fail "feature_tiers check failed ($3)"
import json, sys
tiers = json.loads(sys.argv[1]).get("feature_tiers")
assert tiers is not None, "no feature_tiers in the summary"
which = sys.argv[2]
shares = tiers["device_hit_rate"] + tiers["host_hit_rate"] + tiers["remote_hit_rate"]
assert abs(shares - 1) < 1e-9, tiers
assert 0 < tiers["device_hit_rate"] < 1, tiers
if which == "host":
    assert tiers["host_hit_rate"] > 0 and tiers["remote_hit_rate"] == 0, tiers
    assert tiers["network_mib"] == 0, tiers
elif which == "all":
    assert tiers["host_hit_rate"] > 0 and tiers["remote_hit_rate"] > 0, tiers
    assert tiers["network_mib"] > 0, tiers
else:
    assert tiers["remote_hit_rate"] > 0 and tiers["host_hit_rate"] == 0, tiers
    assert tiers["network_mib"] > 0, tiers
assert tiers["pcie_mib"] == 0, tiers  # CPU trainers: nothing crosses PCIe
print(f"tiers {tiers}", file=sys.stderr)
PY
  for r in 0 1; do
    grep -q "^\[trainer $r\] rank $r feature store (.*): device cpu 1.0 MiB, " "$2" ||
      fail "rank $r did not log a 1 MiB device tier"
    grep -q "^\[trainer $r\] rank $r epoch 1: .*, rows from device " "$2" ||
      fail "rank $r did not log its epoch's rows per tier"
  done
}

# run_all NAME PARTITION MIN_ACC ARGS...: the five runs above, same weights.
run_all() {
  local name=$1 partition=$2 min_acc=$3 reference
  shift 3
  note "$name: rows with the batches"
  launch_2x2 300 "$partition" "$@" --feature-store server
  expect_summary "$WORK/stdout" "$min_acc" 2
  expect_same_weights "$WORK/stderr"
  python3 -c 'import json,sys; assert "feature_tiers" not in json.loads(sys.argv[1])' \
    "$(tail -n 1 "$WORK/stdout")" || fail "$name: a server-fed run reports feature tiers"
  reference=$FINGERPRINT
  note "$name: 1 MiB device tier + host tier"
  launch_2x2 300 "$partition" "$@" --feature-store device --device-cache-mib 1
  expect_summary "$WORK/stdout" "$min_acc" 2
  expect_same_weights "$WORK/stderr"
  [[ $FINGERPRINT == "$reference" ]] ||
    fail "$name: device + host tiers: weights $FINGERPRINT, server-fed $reference"
  check_tiers "$WORK/stdout" "$WORK/stderr" host
  note "$name: 1 MiB device tier + remote tier"
  launch_2x2 300 "$partition" "$@" --feature-store device --device-cache-mib 1 --host-tier none
  expect_summary "$WORK/stdout" "$min_acc" 2
  expect_same_weights "$WORK/stderr"
  [[ $FINGERPRINT == "$reference" ]] ||
    fail "$name: device + remote tiers: weights $FINGERPRINT, server-fed $reference"
  check_tiers "$WORK/stdout" "$WORK/stderr" remote
  note "$name: 1 MiB device tier + remote tier asked of the owners"
  launch_2x2 300 "$partition" "$@" --feature-store device --device-cache-mib 1 --host-tier none \
    --remote-rows owner
  expect_summary "$WORK/stdout" "$min_acc" 2
  expect_same_weights "$WORK/stderr"
  [[ $FINGERPRINT == "$reference" ]] ||
    fail "$name: remote tier from the owners: weights $FINGERPRINT, server-fed $reference"
  check_tiers "$WORK/stdout" "$WORK/stderr" remote
  note "$name: 1 MiB device tier + 1 MiB host cache of the other rows + remote tier"
  launch_2x2 300 "$partition" "$@" --feature-store device --device-cache-mib 1 --host-tier none \
    --host-cache-mib 1
  expect_summary "$WORK/stdout" "$min_acc" 2
  expect_same_weights "$WORK/stderr"
  [[ $FINGERPRINT == "$reference" ]] ||
    fail "$name: device + host cache + remote tiers: weights $FINGERPRINT, server-fed $reference"
  check_tiers "$WORK/stdout" "$WORK/stderr" all
  for r in 0 1; do
    grep -q "^\[trainer $r\] rank $r feature store .*other hosts' (host cache)" "$WORK/stderr" ||
      fail "rank $r did not log its host cache"
  done
  [[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
  note "ok ($name): the same fingerprint $reference from every tier"
}

partition_cora "$WORK/cora2"
run_all cora "$WORK/cora2" 0.70 --model sage --epochs 8 --eval-every 8 --seed 1

timeout 120 "$BIN/graphshard-partition" partition --input "$SRC/tests/data/imdb" --parts 2 \
  --method random --seed 1 --out "$WORK/imdb2" >"$WORK/partition.log" 2>&1 ||
  { show "$WORK/partition.log"; fail "graphshard-partition partition imdb"; }
run_all imdb "$WORK/imdb2" 0.40 --model sage --epochs 3 --eval-every 3 --hidden 32 \
  --fanouts 10,10 --batch-size 64 --lr 0.005 --weight-decay 1e-3 --seed 1

# Refusals, before any server is asked: the tier flags need the tiered store.
for bad in "--feature-store server --device-cache-mib 1" "--feature-store server --host-tier none" \
  "--device-cache-mib -3" "--device-cache-mib lots" "--host-tier far" \
  "--feature-store server --remote-rows owner" "--remote-rows far" \
  "--feature-store server --host-cache-mib 1" "--host-cache-mib -1" "--host-cache-mib lots" \
  "--feature-store server --device-tier shared" "--device-tier peers"; do
  status=0
  # shellcheck disable=SC2086
  timeout 30 "$BIN/graphshard-trainer" --servers 127.0.0.1:1 $bad >"$WORK/bad.out" \
    2>"$WORK/bad.err" || status=$?
  ((status == 2)) || { show "$WORK/bad.err"; fail "'$bad' exited $status, not 2"; }
  flag=$(sed -n 's/.*\(--device-cache-mib\|--device-tier\|--host-tier\|--host-cache-mib\|--remote-rows\).*/\1/p' \
    <<<"$bad")
  grep -q -- "$flag" "$WORK/bad.err" || { show "$WORK/bad.err"; fail "'$bad' not named"; }
done
note "ok: bad tier flags refused"

# --device-tier shared on CPU trainers: refused once the trainers know their device, naming the
# flag and the device, every process gone (the launcher's exit status non-zero).
launch_named shared_cpu "$WORK/cora2" --model sage --epochs 1 --feature-store device \
  --device-tier shared
((STATUS != 0 && STATUS != 124)) || { show "$WORK/shared_cpu.stderr"; fail "--device-tier shared on CPU trainers: exit $STATUS"; }
grep -q -- "--device-tier shared: needs GPU trainers .* this one trains on cpu" \
  "$WORK/shared_cpu.stderr" || { show "$WORK/shared_cpu.stderr"; fail "--device-tier shared on CPU not explained"; }
[[ -z $(procs_in_work) ]] || fail "processes left behind after the refusal"
note "ok: --device-tier shared refused on CPU trainers"
