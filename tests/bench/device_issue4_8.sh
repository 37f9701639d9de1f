#!/usr/bin/env bash
# Issues 4 and 8 on the GPU machine in one command (kind nvidia-h100-x4: 4 GPUs, 64 cores), from
# the repository root:
#
#   source .devdeps/use-deps.sh .devdeps && bash tests/bench/device_issue4_8.sh
#
# 1. GPU training (gpu_train_bench.sh: builds, generates the full ogbn-products-shaped graph,
#    random partitions): CONFIGS, EPOCHS (3: the last one is timed; from the second epoch on a
#    trainer's streams are served from the rings its first epoch made).
# 2. METIS partition in 2 (issue 4's layout), on the last core, while
# 3. server_bench runs on the random 2-part partition, under taskset on CPUS (0-15: issue 4's 16
#    cores), clients 1, 2, 4 streaming through their kept rings (--warmup-batches);
# 4. server_bench on the METIS partition, float32 then float16 transport.
# RANDOM_BENCH=0 / F16_BENCH=0 skip step 3 / the float16 run of step 4.
# Results: $OUT/gpu_results.jsonl, $OUT/server_bench.jsonl (JSON lines; names prefixed with the
# partition and dtype); the key lines are printed.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
CPUS=${CPUS:-0-15}
BATCHES=${BATCHES:-150}
WARMUP=${WARMUP:-30}
log() { echo "[device +${SECONDS}s] $*" >&2; }

export EXTRA_TARGETS=server_bench EPOCHS=${EPOCHS:-3} TOTAL_BUDGET=${GPU_BUDGET:-330}
export CONFIGS=${CONFIGS:-"1gpu_2srv 4gpu_4srv 2gpu_2srv 4gpu_2srv 1gpu_1srv"}
OUT=/tmp/gpu-bench-out WORK=/tmp/gs-gpu-bench bash tests/bench/gpu_train_bench.sh \
  2>"$OUT/gpu_bench.log" | grep '"name"' >"$OUT/gpu_results.jsonl"
sed 's/"config": {[^}]*}, //' "$OUT/gpu_results.jsonl"
B=build-gpu/bin
GRAPH=/tmp/gs-gpu-bench/products
[[ -x $B/server_bench && -s $GRAPH/edge_index.npy ]] || { log "no build or graph"; exit 1; }

METIS=/tmp/gsdata/p2
if [[ ! -s $METIS/graphshard.json ]]; then
  last=$(($(nproc) - 1))
  taskset -c "$last" "$B/graphshard-partition" partition --input "$GRAPH" --parts 2 \
    --method metis --seed 0 --out "$METIS" >"$OUT/metis.log" 2>&1 &
  METIS_PID=$!
else
  METIS_PID=""
fi

bench() {  # partition-dir prefix extra-flags...
  local dir=$1 prefix=$2
  shift 2
  taskset -c "$CPUS" "$B/server_bench" --partition "$dir" --batches "$BATCHES" \
    --threads "$(taskset -c "$CPUS" nproc)" --prefetch 8 --peer-features local --shm-ring on \
    --clients 1,2,4 --warmup-batches "$WARMUP" "$@" 2>>"$OUT/server_bench.err" |
    sed "s/\"name\": \"/\"name\": \"$prefix/; s/\"baseline\": \"/\"baseline\": \"$prefix/" |
    tee -a "$OUT/server_bench.jsonl" |
    grep -E 'scaling_.*(batches_per_s|server_cpu_util|sample_(wall|cpu)_ms|gather_(wall|cpu)_ms|minor_faults|batches_building)"' |
    grep -v finish | sed 's/, "unit.*//; s/{"name": "//; s/", "value"//' | tr '\n' ' '
  echo
}
if [[ ${RANDOM_BENCH:-1} == 1 ]]; then
  log "server bench, random partition"
  bench /tmp/gs-gpu-bench/p2_random random_
fi
if [[ -n $METIS_PID ]]; then
  wait "$METIS_PID" || { tail -5 "$OUT/metis.log"; exit 1; }
  log "METIS partitioned"
fi
log "server bench, METIS partition"
bench "$METIS" metis_
[[ ${F16_BENCH:-1} == 1 ]] && bench "$METIS" metis_f16_ --feature-dtype float16
log "done"
