#!/usr/bin/env bash
# Full-graph inference benchmark, in one command on the GPU machine, from the
# repository root:
#
#   source .devdeps/use-deps.sh .devdeps && bash tests/bench/infer_bench.sh
#
# Builds the four binaries (Release, CUDA arch 90) while it generates the ogbn-products-shaped
# graph (tests/bench/gen_products_like.py: 2,449,029 nodes, 123.7 M directed edges, 100
# features), partitions it into 2 parts (random), trains 3-layer GraphSAGE (hidden 256, fanouts
# 15,10,5, batch 1024) for EPOCHS epochs with --checkpoint-dir on 1 GPU and 2 servers, then
# runs --infer on that checkpoint over every node with 1 GPU (and 2 GPUs when nvidia-smi lists
# 2+), 2 servers each time, --precision fp32 (and bf16). Prints JSON lines:
#   infer_<N>gpu_2srv_<precision>: value = nodes/s over all passes (every node of the graph, its
#     whole in-neighbourhood, 3 passes), baseline = the training run's seeds/s of its last
#     epoch in this same script (1 GPU, 2 servers), ratio = value / baseline; also time_s,
#     pass times, the JSON summary of the trainer;
#   infer_train_baseline: the training run's seeds/s and epoch time.
# A run that fails prints a JSON line with "error"; nothing is estimated. Everything (logs,
# results.jsonl) goes under $OUT (default ./infer-bench-out).
# Knobs: EPOCHS (1), RUN_TIMEOUT (360 s per run), TOTAL_BUDGET (580 s), JOBS (nproc), BUILD
# (build-gpu, shared with gpu_train_bench.sh), WORK (/tmp/gs-gpu-bench, shared too: the graph
# and partitions are reused), GEN_ARGS (e.g. "--num-nodes 200000 --num-edges 8000000" for a
# quick try), PRECISIONS ("fp32 bf16"), BATCH (inference block size, 1024). Dry run elsewhere:
# BIN_DIR, GRAPH_DIR, DEVICE=cpu.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/infer-bench-out}
WORK=${WORK:-/tmp/gs-gpu-bench}
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
EPOCHS=${EPOCHS:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-360}
TOTAL_BUDGET=${TOTAL_BUDGET:-580}
GEN_ARGS=${GEN_ARGS:-}
PRECISIONS=${PRECISIONS:-"fp32 bf16"}
BATCH=${BATCH:-1024}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT" "$WORK"
if [[ -z ${DEVICE_CMAKE_ARGS:-} && -f .devdeps/use-deps.sh ]]; then
  # shellcheck disable=SC1091
  source .devdeps/use-deps.sh .devdeps
fi

log() { echo "[infer-bench +$((SECONDS))s] $*" >&2; }
emit() { echo "$1" | tee -a "$OUT/results.jsonl"; }
die() {
  log "$*"
  emit "{\"name\": \"infer_bench\", \"error\": \"$*\"}"
  exit 1
}

CORES=$(nproc)
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
log "machine: $CORES cores, $GPUS GPU(s) ($GPU_NAME)"

GRAPH=${GRAPH_DIR:-$WORK/products}
GEN_PID=""
if [[ ! -s $GRAPH/edge_index.npy ]]; then
  log "generating the graph into $GRAPH (background)"
  # shellcheck disable=SC2086
  (python3 tests/bench/gen_products_like.py --out "$GRAPH" --threads 6 $GEN_ARGS \
    >"$OUT/generate.log" 2>&1; echo $? >"$WORK/generate.status") &
  GEN_PID=$!
else
  echo 0 >"$WORK/generate.status"
fi

if [[ -n ${BIN_DIR:-} ]]; then
  BIN=$BIN_DIR
else
  log "building into $BUILD"
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${DEVICE_CMAKE_ARGS:-} \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$OUT/cmake.log" 2>&1 || { tail -40 "$OUT/cmake.log" >&2; die "cmake configure failed"; }
  cmake --build "$BUILD" -j"$JOBS" --target graphshard-partition graphshard-server \
    graphshard-health graphshard-trainer >"$OUT/build.log" 2>&1 ||
    { grep -E "error|Error" -A3 "$OUT/build.log" | head -60 >&2; die "build failed"; }
  BIN=$BUILD/bin
fi
if [[ -n $GEN_PID ]]; then wait "$GEN_PID"; fi
[[ $(cat "$WORK/generate.status") == 0 ]] || { tail -20 "$OUT/generate.log" >&2; die "generate failed"; }

PARTS=$WORK/p2_random
if [[ ! -s $PARTS/graphshard.json ]]; then
  log "partitioning into 2 parts"
  "$BIN/graphshard-partition" partition --input "$GRAPH" --parts 2 --method random --seed 1 \
    --out "$PARTS" >"$OUT/partition.log" 2>&1 || die "partition failed (see $OUT/partition.log)"
fi

MODEL=(--device "$DEVICE" --model sage --hidden 256 --fanouts "15,10,5" --seed 1)
THREADS=$(((CORES - 4) / 2))
((THREADS >= 1)) || THREADS=1
launch() {  # launch NAME TRAINERS [trainer flags]: sets STATUS
  local name=$1 trainers=$2
  shift 2
  local left=$((TOTAL_BUDGET - SECONDS - 10))
  if ((left < 60)); then
    STATUS=124
    emit "{\"name\": \"infer_$name\", \"error\": \"not run: ${left}s left of TOTAL_BUDGET\"}"
    return
  fi
  local limit=$((left < RUN_TIMEOUT ? left : RUN_TIMEOUT))
  log "run $name ($trainers trainer(s), 2 servers x $THREADS threads, limit ${limit}s)"
  STATUS=0
  timeout "$limit" deploy/graphshard-launch --partition "$PARTS" --servers 2 \
    --trainers "$trainers" --bin-dir "$BIN" --server-wait-s 120 \
    --server-arg=--threads=$THREADS -- "${MODEL[@]}" --threads 4 "$@" \
    >"$OUT/$name.stdout" 2>"$OUT/$name.stderr" || STATUS=$?
  if ((STATUS != 0)); then
    tail -15 "$OUT/$name.stderr" >&2
    emit "{\"name\": \"infer_$name\", \"error\": \"exit status $STATUS (124 = timeout)\", \"gpu\": \"$GPU_NAME\"}"
  fi
}

rm -rf "$WORK/infer_ck"
launch train 1 --batch-size 1024 --epochs "$EPOCHS" --eval-every 0 --lr 0.003 \
  --checkpoint-dir "$WORK/infer_ck" --metrics-file "$OUT/train.metrics.jsonl"
((STATUS == 0)) || die "training failed"
BASELINE=$(python3 -c "
import json, sys
e = [r for r in map(json.loads, open(sys.argv[1])) if r.get('event') == 'epoch'][-1]
print(json.dumps({'name': 'infer_train_baseline', 'value': round(e['seeds_per_s'], 1),
                  'unit': 'seeds/s', 'epoch_time_s': round(e['time_s'], 3),
                  'config': {'gpu': sys.argv[2], 'trainers': 1, 'servers': 2,
                             'model': 'sage-3x256', 'fanouts': [15, 10, 5], 'batch_size': 1024}}))
" "$OUT/train.metrics.jsonl" "$GPU_NAME") || die "no training figures"
emit "$BASELINE"

for precision in $PRECISIONS; do  # fp32 at 1 and 2 GPUs first: the figures to report
  for n in 1 2; do
    name=${n}gpu_2srv_$precision
    if ((n > GPUS)) && [[ $DEVICE == cuda ]]; then
      emit "{\"name\": \"infer_$name\", \"error\": \"not run: nvidia-smi lists $GPUS GPU(s)\"}"
      continue
    fi
    rm -rf "$WORK/infer_out"
    launch "$name" "$n" --batch-size "$BATCH" --precision "$precision" --infer \
      --checkpoint-dir "$WORK/infer_ck" --out "$WORK/infer_out"
    ((STATUS == 0)) || continue
    emit "$(python3 - "$(tail -n 1 "$OUT/$name.stdout")" "$BASELINE" "$name" "$OUT/$name.stderr" \
      "$GPU_NAME" <<'PY'
import json, re, sys
summary, baseline, name, stderr, gpu = sys.argv[1:]
s, b = json.loads(summary), json.loads(baseline)
passes = [float(m.group(1)) for m in
          re.finditer(r"rank 0: inference pass \d+ of \d+ in ([0-9.]+) s", open(stderr).read())]
print(json.dumps({"name": f"infer_{name}", "value": s["nodes_per_s"], "unit": "nodes/s",
                  "baseline": b["value"], "ratio": round(s["nodes_per_s"] / b["value"], 3),
                  "time_s": s["time_s"], "pass_time_s": passes, "nodes": s["inference_nodes"],
                  "test_acc": s["test_acc"], "gpu": gpu, "summary": s}))
PY
)"
  done
done
log "done in ${SECONDS}s; results in $OUT/results.jsonl"
