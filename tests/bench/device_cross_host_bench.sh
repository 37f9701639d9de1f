#!/usr/bin/env bash
# Cross-host server throughput, in one command, on the GPU machine's CPUs
# (no GPU needed). Builds (no Torch), generates the ogbn-products-shaped graph, METIS-partitions
# it in 2 (both reused from BENCH_DATA when present), then:
#  1. server_bench --cross-host: 2 in-process servers per mode, restarted per mode, and 1/2/4
#     concurrent streaming clients (client c reads server c mod 2, shared memory, rings kept),
#     float32 and float16 batches, for each of MODES: samehost (peers' parts mapped:
#     --peer-features local --peer-sampling local), crosshost (--isolated-peers: every remote
#     hop and row over gRPC/TCP loopback), crosshost_cache (+ --peer-cache-mib CACHE_MIB),
#     crosshost_bulk (the bulk transport instead of gRPC: --peer-transport bulk),
#     crosshost_bulk_cache, crosshost_bulk_cache_f16wire (+ --peer-dtype float16); also
#     accepted: crosshost_f16wire, crosshost_cache_f16wire, crosshost_bulk_f16wire,
#     samehost_rpc (peers asked, rows through shared memory), samehost_rpc_whole,
#     crosshost_whole and crosshost_bulk_whole (a peer's rows of a batch in one answer:
#     --peer-piece-mib 0, against the default pieces as `xhost_<mode>_vs_whole_*`). Reported per mode,
#     dtype and client count: batches/s, peer bytes on the wire per batch, server CPU, cache hit
#     rate, and each mode / samehost (same run) as `xhost_<mode>_vs_samehost_*` with a ratio.
#  2. Where `ip` and `tc` exist (NETNS=auto, the default; NETNS=off skips, NETNS=on requires
#     them): two network namespaces joined by a veth capped at LINK_GBIT (default 25) Gbit/s in
#     each direction (tc tbf), one graphshard-server per namespace (--isolated-peers) with its
#     clients in the same namespace (one server_bench --attach per namespace, timed runs started
#     together through a barrier), for each of NETNS_MODES (default "crosshost_bulk
#     crosshost_bulk_cache"; same names as MODES).
#     Reported: each side's JSON (`netns_<mode>_A_*`, `_B_*`, with the veth's tx/rx bytes/s and
#     utilisation = max(tx, rx) / link rate), and summed: `netns_<mode>_<dtype>_<n>clients_
#     batches_per_s`, `..._link_utilisation` (the busier side), and the ratio to samehost.
# Knobs: BENCH_BATCHES (60 per client), PREFETCH (8: batches each server stream builds ahead), CLIENTS (1,2,4), DTYPES (float32,float16), CACHE_MIB
#   (256), WARMUP (4 batches per client, untimed, ring kept), CPUS (taskset list), METHOD (metis),
#   SMALL=1 (a 200k-node generated graph with random parts instead: a quick check anywhere),
#   BUILD_DIR (build-dev; SKIP_BUILD=1 uses it as it is), BENCH_DATA (/tmp/gsdata), MODES (empty:
#   the netns variant only), NETNS_MODES (space-separated).
# Results: JSON lines in $OUT/cross_host.jsonl; logs in $OUT.
#   device: source .devdeps/use-deps.sh .devdeps && tests/bench/device_cross_host_bench.sh
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
J=$(nproc)
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/steps.log" >&2; }
log "cores $J; $(grep -m1 'model name' /proc/cpuinfo); $(free -g | awk '/Mem:/ {print $2}') GiB"
B_DIR=${BUILD_DIR:-build-dev}
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  rm -f "$B_DIR/CMakeCache.txt"  # a warm machine may hold a configure from another tree state
  # shellcheck disable=SC2086  # DEVICE_CMAKE_ARGS: several arguments
  cmake -S . -B "$B_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHSHARD_BUILD_TRAINER=OFF \
    ${DEVICE_CMAKE_ARGS:-} >"$OUT/cmake.log" 2>&1
  cmake --build "$B_DIR" --target graphshard-partition graphshard-server server_bench -j"$J" \
    >"$OUT/build.log" 2>&1
  log "built"
fi
BIN=$(readlink -f "$B_DIR/bin")
D=${BENCH_DATA:-/tmp/gsdata}
mkdir -p "$D"
METHOD=${METHOD:-metis}
if [[ ${SMALL:-0} == 1 ]]; then
  GRAPH=$D/graph_small
  P2=$D/p2_small
  if [[ ! -s $P2/graphshard.json ]]; then
    "$BIN/graphshard-partition" generate --kind products --seed 1 --num-nodes 200000 \
      --avg-degree 20 --num-features 100 --out "$GRAPH" >"$OUT/gen.log" 2>&1
    "$BIN/graphshard-partition" partition --input "$GRAPH" --parts 2 --method random --seed 0 \
      --out "$P2" >"$OUT/partition.log" 2>&1
    log "small graph generated and partitioned (random)"
  fi
else
  GRAPH=${GRAPH_DIR:-$D/graph}
  P2=$D/p2
  [[ $METHOD == metis ]] || P2=$D/p2_$METHOD
  if [[ ! -s $P2/graphshard.json ]]; then
    if [[ ! -s $GRAPH/edge_index.npy ]]; then
      python3 tests/bench/gen_products_like.py --out "$GRAPH" --threads 8 >"$OUT/gen.log" 2>&1
      log "generated"
    fi
    "$BIN/graphshard-partition" partition --input "$GRAPH" --parts 2 --method "$METHOD" \
      --seed 0 --out "$P2" >"$OUT/partition.log" 2>&1
    log "partitioned ($METHOD)"
  else
    log "reusing $P2"
  fi
fi
P2=$(readlink -f "$P2")
B=${BENCH_BATCHES:-60}
PREFETCH=${PREFETCH:-8}  # batches each server stream builds ahead (>= 1)
CLIENTS=${CLIENTS:-1,2,4}
DTYPES=${DTYPES:-float32,float16}
CACHE_MIB=${CACHE_MIB:-256}
WARMUP=${WARMUP:-4}
MODES=${MODES-samehost,crosshost,crosshost_cache,crosshost_bulk,crosshost_bulk_cache,crosshost_bulk_cache_f16wire}
PIN=()
if [[ -n ${CPUS:-} ]]; then
  PIN=(taskset -c "$CPUS")
  J=$(taskset -c "$CPUS" nproc)
  log "pinned to CPUs $CPUS ($J cores)"
fi
RESULTS=$OUT/cross_host.jsonl
: >"$RESULTS"

# --- 1. same host against cross host, in one process -----------------------------------------
[[ -n $MODES ]] || log "cross-host section skipped (MODES empty)"
[[ -n $MODES ]] && set -x
[[ -z $MODES ]] || timeout "${XHOST_TIMEOUT:-1800}" "${PIN[@]}" "$BIN/server_bench" --partition "$P2" \
  --cross-host "$MODES" --clients "$CLIENTS" --feature-dtype "$DTYPES" --batches "$B" \
  --threads "$J" --prefetch "$PREFETCH" --peer-cache-mib "$CACHE_MIB" --warmup-batches "$WARMUP" \
  2>"$OUT/cross_host.err" | tee -a "$RESULTS" || log "cross-host section: exit $?"
{ set +x; } 2>/dev/null
log "cross-host section done"

# --- 2. two namespaces joined by a capped veth --------------------------------------------------
NETNS=${NETNS:-auto}
if [[ $NETNS == off ]]; then
  log "netns variant skipped (NETNS=off)"
  exit 0
fi
# ip and tc, or iproute2 carried in .devdeps (tests/bench/netns_lib.sh: the GPU machine has none).
# shellcheck source=tests/bench/netns_lib.sh
source tests/bench/netns_lib.sh
if ! netns_tools; then
  [[ $NETNS == on ]] && { log "NETNS=on but ip/tc are missing"; exit 1; }
  log "netns variant skipped: ip and tc (iproute2) are not installed"
  exit 0
fi
LINK_GBIT=${LINK_GBIT:-25}
tag=$$
nsA=gsx$tag-A nsB=gsx$tag-B
ifA=gsxA$tag ifB=gsxB$tag
ifA=${ifA:0:15} ifB=${ifB:0:15}
addrA=10.78.0.1 addrB=10.78.0.2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-xhost.XXXXXX")
SERVER_PIDS=() SAMPLE_PIDS=()
cleanup() {
  local p
  for p in "${SAMPLE_PIDS[@]}" "${SERVER_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${SAMPLE_PIDS[@]}" "${SERVER_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  netns_down "$nsA" "$nsB"
  rm -rf "$WORK"
}
trap cleanup EXIT
netns_up "$nsA" "$nsB" "$ifA" "$ifB" "$addrA" "$addrB" "$LINK_GBIT" || exit 1
log "namespaces $nsA ($addrA) and $nsB ($addrB), veth capped at ${LINK_GBIT} Gbit/s each way"
# Each namespace gets half the cores for its server (its clients' threads come on top).
HALF=$(((J + 1) / 2))
for mode in ${NETNS_MODES:-crosshost_bulk crosshost_bulk_cache}; do
  mode=${mode//,/ }
  flags=(--isolated-peers --peer-cache-mib 0)
  [[ $mode == *cache* ]] && flags=(--isolated-peers --peer-cache-mib "$CACHE_MIB")
  [[ $mode == *f16wire* ]] && flags+=(--peer-dtype float16)
  # The servers' default is bulk: say gRPC for the other modes.
  if [[ $mode == *bulk* ]]; then flags+=(--peer-transport bulk); else flags+=(--peer-transport grpc); fi
  reg=$WORK/registry-$mode
  bar=$WORK/barrier-$mode
  mkdir -p "$reg" "$bar"
  SERVER_PIDS=() SAMPLE_PIDS=()
  for k in 0 1; do
    ns=$nsA addr=$addrA
    ((k == 1)) && ns=$nsB addr=$addrB
    ip netns exec "$ns" "$BIN/graphshard-server" --partition "$P2" --part "$k" \
      --listen "$addr:0" --registry "$reg" --threads "$HALF" --prefetch "$PREFETCH" --rpc-timeout-s 120 \
      "${flags[@]}" >"$OUT/netns_${mode}_server$k.log" 2>&1 &
    SERVER_PIDS+=($!)
  done
  for k in 0 1; do
    for _ in $(seq 600); do [[ -s $reg/part_$k ]] && break; sleep 0.1; done
    [[ -s $reg/part_$k ]] || { cat "$OUT/netns_${mode}_server$k.log" >&2; log "server $k did not start"; exit 1; }
    # $! is the subshell running the `ip` function, not the server: find the server itself
    # (its CPU is what --server-pids samples; the re-exec for the malloc tunables keeps its pid).
    pid=$(pgrep -f -- "graphshard-server --partition $P2 --part $k --listen" | head -1)
    SAMPLE_PIDS[k]=${pid:-${SERVER_PIDS[k]}}
  done
  if [[ $mode == *cache* ]]; then
    for k in 0 1; do
      for _ in $(seq 6000); do
        grep -q "peer cache: part $((1 - k)): .* cached" "$OUT/netns_${mode}_server$k.log" && break
        sleep 0.1
      done
    done
    grep -h "peer cache" "$OUT"/netns_"${mode}"_server*.log >&2 || true
  fi
  addrs="$(cat "$reg/part_0"),$(cat "$reg/part_1")"
  log "netns $mode: servers at $addrs"
  side_pids=()
  for k in 0 1; do
    ns=$nsA dev=$ifA side=A
    ((k == 1)) && ns=$nsB dev=$ifB side=B
    ip netns exec "$ns" timeout "${NETNS_TIMEOUT:-900}" "$BIN/server_bench" --attach "$addrs" \
      --client-parts "$k" --attach-name "netns_${mode}_$side" --server-pids "${SAMPLE_PIDS[k]}" \
      --net-dev "$dev" --link-gbit "$LINK_GBIT" --barrier "$bar:2" --clients "$CLIENTS" \
      --feature-dtype "$DTYPES" --batches "$B" --threads "$HALF" --warmup-batches "$WARMUP" \
      >"$WORK/side_$k.jsonl" 2>"$OUT/netns_${mode}_clients$k.err" &
    side_pids+=($!)
  done
  for p in "${side_pids[@]}"; do wait "$p" || log "netns $mode: a client process exited $?"; done
  for k in 0 1; do cp "$WORK/side_$k.jsonl" "$OUT/netns_${mode}_side$k.jsonl"; done  # each side's raw lines
  cat "$WORK/side_0.jsonl" "$WORK/side_1.jsonl" | grep -v '"name": "cores"' | tee -a "$RESULTS"
  # Both sides together: batches/s summed, the busier side's link utilisation, ratio to samehost.
  python3 - "$mode" "$WORK/side_0.jsonl" "$WORK/side_1.jsonl" "$RESULTS" <<'PY' | tee -a "$RESULTS"
import json, re, sys
mode, a, b, results = sys.argv[1:]
rows = {}
for path in (a, b):
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            rows[r["name"]] = r["value"]
same = {}
for line in open(results):
    if line.startswith("{"):
        r = json.loads(line)
        same[r["name"]] = r["value"]
keys = sorted({m.group(1) for n in rows
               for m in [re.match(r"xhost_netns_%s_[AB]_(f\d+_\d+clients)_batches_per_s$" % re.escape(mode), n)] if m})
for key in keys:
    bps = sum(rows.get("xhost_netns_%s_%s_%s_batches_per_s" % (mode, s, key), 0) for s in "AB")
    util = max(rows.get("xhost_netns_%s_%s_%s_link_utilisation" % (mode, s, key), 0) for s in "AB")
    wire = sum(rows.get("xhost_netns_%s_%s_%s_peer_wire_bytes_per_batch" % (mode, s, key), 0)
               * rows.get("xhost_netns_%s_%s_%s_batches" % (mode, s, key), 0) for s in "AB")
    batches = sum(rows.get("xhost_netns_%s_%s_%s_batches" % (mode, s, key), 0) for s in "AB")
    name = "netns_%s_%s" % (mode, key)
    out = [{"name": name + "_batches_per_s", "value": bps, "unit": "batches/s"},
           {"name": name + "_link_utilisation", "value": util, "unit": "fraction_of_link"}]
    if batches:
        out.append({"name": name + "_peer_wire_bytes_per_batch", "value": wire / batches, "unit": "B/batch"})
    base = same.get("xhost_samehost_%s_batches_per_s" % key)
    if base:
        out.append({"name": name + "_vs_samehost_batches_per_s", "value": bps, "unit": "batches/s",
                    "baseline": "xhost_samehost_%s_batches_per_s" % key, "ratio": bps / base})
    for r in out:
        print(json.dumps(r))
PY
  # The servers themselves (SAMPLE_PIDS), then the subshells that started them.
  for p in "${SAMPLE_PIDS[@]}" "${SERVER_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${SERVER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  SERVER_PIDS=() SAMPLE_PIDS=()
  log "netns $mode done"
done
log "all done: $RESULTS"
