#!/usr/bin/env bash
# Server benchmarks on the GPU machine's CPUs (no GPU needed), in one command: build (no Torch),
# generate the full ogbn-products-shaped graph, METIS-partition it in 2, run server_bench.
#   MODE=streams (default): float32, then float16 transport (1 stream over gRPC and shared
#     memory, 2 servers x 2 clients).
#   MODE=scaling: the sampling-only scaling section, 1/2/4/8 concurrent streaming clients
#     (CLIENTS), peer feature rows through GatherFeatures ("rpc") and from same-host peers'
#     mapped parts ("local") (PEER, default rpc,local), clients reading one-shot and ring
#     segments (RING, default off,on), same-host peers sampled in-process or by RPC
#     (PEER_SAMPLING, default local) in one process; then the same in float16 for CLIENTS_F16
#     (empty = skip).
#   CPUS (e.g. 0-15): run the benchmark under taskset on those CPUs (threads and utilisation
#     follow). The graph and partition in BENCH_DATA are reused when present (warm machine).
# Results: JSON lines in $OUT/server_bench.jsonl.
#   device: source .devdeps/use-deps.sh .devdeps && tests/bench/device_server_bench.sh
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
J=$(nproc)
MODE=${MODE:-streams}
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/steps.log" >&2; }
log "cores $J; $(grep -m1 'model name' /proc/cpuinfo); $(free -g | awk '/Mem:/ {print $2}') GiB"
rm -f build-dev/CMakeCache.txt  # a warm machine may hold a configure from another tree state
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHSHARD_BUILD_TRAINER=OFF \
  ${DEVICE_CMAKE_ARGS:-} >"$OUT/cmake.log" 2>&1
cmake --build build-dev --target graphshard-partition server_bench -j"$J" >"$OUT/build.log" 2>&1
log "built"
D=${BENCH_DATA:-/tmp/gsdata}
GRAPH=${GRAPH_DIR:-$D/graph}  # GRAPH_DIR: an already generated graph (e.g. the GPU bench's)
# METHOD=random: a random partition instead of METIS (quicker; for diagnosis, not the
# throughput figures, which are on METIS).
METHOD=${METHOD:-metis}
P2=$D/p2
[[ $METHOD == metis ]] || P2=$D/p2_$METHOD
if [[ ! -s $P2/graphshard.json ]]; then
  if [[ ! -s $GRAPH/edge_index.npy ]]; then
    python3 tests/bench/gen_products_like.py --out "$GRAPH" --threads 8 >"$OUT/gen.log" 2>&1
    log "generated"
  fi
  build-dev/bin/graphshard-partition partition --input "$GRAPH" --parts 2 --method "$METHOD" \
    --seed 0 --out "$P2" >"$OUT/partition.log" 2>&1
  log "partitioned ($METHOD)"
else
  log "reusing $P2"
fi
B=${BENCH_BATCHES:-100}
PIN=()
if [[ -n ${CPUS:-} ]]; then
  PIN=(taskset -c "$CPUS")
  J=$(taskset -c "$CPUS" nproc)
  log "pinned to CPUs $CPUS ($J cores)"
fi
if [[ $MODE == scaling ]]; then
  CLIENTS=${CLIENTS:-1,2,4,8}
  CLIENTS_F16=${CLIENTS_F16-1,2,8}
  # PREFETCHES (default 8): one run per value (batches each stream builds ahead); the JSON
  # names of a run other than the first are prefixed with "prefetch<P>_".
  first=1
  for P in ${PREFETCHES:-8}; do
    prefix=""
    ((first)) || prefix="prefetch${P}_"
    set -x
    timeout "${SCALING_TIMEOUT:-240}" "${PIN[@]}" build-dev/bin/server_bench --partition "$P2" --batches "$B" \
      --threads "$J" --prefetch "$P" --peer-features "${PEER:-rpc,local}" --shm-ring "${RING:-off,on}" \
      --peer-sampling "${PEER_SAMPLING:-local}" --clients "$CLIENTS" \
      2>>"$OUT/bench_scaling.err" |
      sed "s/\"name\": \"/\"name\": \"$prefix/; s/\"baseline\": \"/\"baseline\": \"$prefix/" |
      tee -a "$OUT/server_bench.jsonl" || log "scaling float32 prefetch $P: exit $?"
    { set +x; } 2>/dev/null
    log "scaling float32 prefetch $P done"
    first=0
  done
  if [[ -n $CLIENTS_F16 ]]; then
    set -x
    timeout "${F16_TIMEOUT:-150}" "${PIN[@]}" build-dev/bin/server_bench --partition "$P2" --batches "$B" \
      --threads "$J" --prefetch 8 --peer-features "${PEER:-rpc,local}" --shm-ring "${RING:-off,on}" \
      --clients "$CLIENTS_F16" \
      --feature-dtype float16 2>"$OUT/bench_scaling_f16.err" |
      sed 's/"name": "/"name": "f16_/; s/"baseline": "/"baseline": "f16_/' |
      tee -a "$OUT/server_bench.jsonl" || log "scaling float16: exit $?"
    { set +x; } 2>/dev/null
    log "scaling float16 done"
  fi
  exit 0
fi
build-dev/bin/server_bench --partition "$P2" --batches "$B" --threads "$J" --prefetch 8 \
  2>"$OUT/bench_f32.err" | tee "$OUT/server_bench.jsonl"
log "float32 done"
build-dev/bin/server_bench --partition "$P2" --batches "$B" --threads "$J" --prefetch 8 \
  --feature-dtype float16 2>"$OUT/bench_f16.err" | sed 's/"name": "/"name": "f16_/' |
  tee -a "$OUT/server_bench.jsonl"
log "float16 done"
