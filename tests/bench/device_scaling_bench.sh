#!/usr/bin/env bash
# GPU scaling (1-4 trainers) and server stream throughput (2 servers to 1, 2, 4 streaming clients)
# on the GPU machine in one command (kind nvidia-h100-x4: 4 GPUs, 64 cores), from
# the repository root:
#
#   source .devdeps/use-deps.sh .devdeps && bash tests/bench/device_scaling_bench.sh
#
# 1. Builds (Release, CUDA arch 90) while generating the full ogbn-products-shaped graph.
# 2. METIS partition in 2 (the server benchmark's) on the last core, in the background, while
# 3. GPU training runs (gpu_train_bench.sh on random partitions): CONFIGS, EPOCHS (3: the last
#    one is timed), GPU_BUDGET seconds.
# 4. server_bench on the METIS partition under taskset on CPUS (0-15: 16 cores),
#    clients 1, 2, 4 streaming through their kept rings (--warmup-batches), float32, for each
#    server --prefetch in SERVER_PREFETCHES ("8 16"), REPEAT times each (1); float16 with
#    F16_BENCH=1 (at the last prefetch).
# Results: $OUT/gpu_results.jsonl, $OUT/server_bench.jsonl (JSON lines; names prefixed with the
# partition, prefetch, dtype and build); the key lines are printed. Logs go to $LOGS (the device
# tool brings back only a few files from $OUT).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-/tmp/out}
LOGS=${LOGS:-/tmp/device-logs}
mkdir -p "$OUT" "$LOGS"
CPUS=${CPUS:-0-15}
BATCHES=${BATCHES:-150}
WARMUP=${WARMUP:-30}
WORK=/tmp/gs-gpu-bench
GRAPH=$WORK/products
BUILD=$ROOT/build-gpu
log() { echo "[device +${SECONDS}s] $*" >&2; }
mkdir -p "$WORK"

if [[ ! -s $GRAPH/edge_index.npy ]]; then
  python3 tests/bench/gen_products_like.py --out "$GRAPH" --threads 6 >"$LOGS/generate.log" 2>&1 &
  GEN_PID=$!
else
  GEN_PID=""
fi
CMAKE_COMMON=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc
  -DCMAKE_CUDA_ARCHITECTURES=90)
# shellcheck disable=SC2086
cmake -S . -B "$BUILD" "${CMAKE_COMMON[@]}" ${DEVICE_CMAKE_ARGS:-} >"$LOGS/cmake.log" 2>&1 &&
  cmake --build "$BUILD" -j"$(nproc)" --target graphshard-partition graphshard-server \
    graphshard-health graphshard-trainer server_bench >"$LOGS/build.log" 2>&1 ||
  { grep -E "error" -A3 "$LOGS/build.log" "$LOGS/cmake.log" | head -40; exit 1; }
log "built"
if [[ -n $GEN_PID ]]; then
  wait "$GEN_PID" || { tail -5 "$LOGS/generate.log"; exit 1; }
fi
log "graph ready"
B=$BUILD/bin

METIS=/tmp/gsdata/p2
if [[ ! -s $METIS/graphshard.json ]]; then
  last=$(($(nproc) - 1))
  taskset -c "$last" "$B/graphshard-partition" partition --input "$GRAPH" --parts 2 \
    --method metis --seed 0 --out "$METIS" >"$LOGS/metis.log" 2>&1 &
  METIS_PID=$!
else
  METIS_PID=""
fi

export EPOCHS=${EPOCHS:-3} TOTAL_BUDGET=${GPU_BUDGET:-300}
export CONFIGS=${CONFIGS:-"1gpu_2srv_reg 4gpu_2srv_reg 4gpu_4srv_reg 2gpu_2srv_reg"}
OUT=/tmp/gpu-bench-out WORK=$WORK BIN_DIR=$B GRAPH_DIR=$GRAPH bash tests/bench/gpu_train_bench.sh \
  2>"$LOGS/gpu_bench.log" | grep '"name"' >"$OUT/gpu_results.jsonl"
sed 's/"config": {[^}]*}, //' "$OUT/gpu_results.jsonl"

bench() {  # binary-dir prefix server-prefetch extra-flags...
  local bin=$1 prefix=$2 prefetch=$3
  shift 3
  taskset -c "$CPUS" "$bin/server_bench" --partition "$METIS" --batches "$BATCHES" \
    --threads "$(taskset -c "$CPUS" nproc)" --prefetch "$prefetch" --peer-features local --shm-ring on \
    --clients 1,2,4 --warmup-batches "$WARMUP" "$@" 2>>"$LOGS/server_bench.err" |
    sed "s/\"name\": \"/\"name\": \"$prefix/; s/\"baseline\": \"/\"baseline\": \"$prefix/" |
    tee -a "$OUT/server_bench.jsonl" |
    grep -E 'scaling_.*(batches_per_s|server_cpu_util|sample_cpu_ms|gather_cpu_ms)"' |
    sed 's/, "unit.*//; s/{"name": "//; s/", "value"//' | tr '\n' ' '
  echo
}
if [[ -n $METIS_PID ]]; then
  wait "$METIS_PID" || { tail -5 "$LOGS/metis.log"; exit 1; }
fi
log "METIS partitioned; server bench"
for ((r = 1; r <= ${REPEAT:-1}; ++r)); do
  for p in ${SERVER_PREFETCHES:-8 16}; do
    bench "$B" "metis_p${p}_r${r}_" "$p"
  done
done
[[ ${F16_BENCH:-0} == 1 ]] && bench "$B" "metis_p${p}_f16_" "$p" --feature-dtype float16
log "done"
