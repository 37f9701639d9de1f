#!/usr/bin/env bash
# Python loader benchmark, in one command on the GPU machine (PyTorch 2.11 +
# torch_geometric 2.8 in its python3), from the repository root:
#
#   source .devdeps/use-deps.sh .devdeps && bash tests/bench/python_loader_bench.sh
#
# Builds the binaries and the Python module graphshard._graphshard against that python3's
# PyTorch (pybind11 from torch/include when pybind11-dev is absent; Release), generates the
# ogbn-products-shaped graph (tests/bench/gen_products_like.py, as gpu_train_bench.sh; reused
# from $WORK when there), partitions it into 2 parts, and then, in the same run, on 1 GPU with 2
# servers (same server threads and prefetch for both):
#   cpp     graphshard-trainer (GraphSAGE 3 x 256, fanouts 15,10,5, batch 1024, --h2d registered)
#   pyg     examples/pyg_products_train.py: PyG's GraphSAGE, same sizes, graphshard.Loader with
#           device=cuda (read ahead, DMA out of the page-locked ring segments)
# EPOCHS epochs each; each run's figure is the median of its epochs after the first (the first
# includes CUDA start-up and compilation), its last epoch beside it. ROUNDS (1) repeats the C++
# run and the variants in turn, each round's ratio against that round's C++ run.
# Prints JSON lines (name, value, unit): each run's epoch time and data wait, then
# python_loader_epoch_ratio = pyg / cpp epoch time (target <= 1.2; the reference: PyG's own
# NeighborLoader with 12 workers took 12.56 s per epoch there, 90% data wait). Everything
# (logs, per-epoch JSON) goes under $OUT (default ./python-bench-out). A run that fails prints a
# JSON line with "error"; nothing is estimated.
# Knobs: EPOCHS (3), PYTHON (python3), BUILD (build-gpu), WORK (/tmp/gs-gpu-bench), JOBS (nproc),
# SERVER_PREFETCH (8), RUN_TIMEOUT seconds per run (240), GEN_ARGS (e.g. "--num-nodes 200000
# --num-edges 8000000" for a quick try), PY_PREFETCH (4), DEVICE (cuda; cpu for a dry run),
# PYG_VARIANTS (default "untrimmed_fp32 trimmed_tf32 trimmed_tf32_compiled
# trimmed_tf32_cudagraphs_fused": PyG as users run it today, the example's defaults (the C++
# trainer's work and precision), the same with --compile, and with --cuda-graphs --fused-adam
# (the fastest); also trimmed_bf16, trimmed_bf16_csr / untrimmed_bf16_csr (the example's
# --edge-index csr), bipartite_tf32 / bipartite_bf16 (--trim bipartite), trimmed_tf32_fused
# (--fused-adam), untrimmed_tf32_compiled, bipartite_tf32_compiled,
# trimmed_tf32_compiled_fused; trimmed_tf32_cudagraphs, trimmed_tf32_cudagraphs_fused,
# bipartite_tf32_cudagraphs: --cuda-graphs, batches padded to fixed shapes and CUDA graphs).
# PROFILE_STEPS (0; N: each variant then runs N more steps
# under torch.profiler and prints python_loader_profile_<variant>: wall, main-thread CPU and GPU
# kernel ms per step, the top CPU ops; PROFILE_TRACE=1: and its Chrome trace in $OUT). Each variant's line has its last epoch's CPU seconds of the
# training loop's thread and of the loader's read-ahead thread. NEIGHBOR_LOADER (1: also PyG's own NeighborLoader, tests/bench/pyg_neighbor_loader.py, NL_WORKERS (12) workers, NL_EPOCHS (2)
# epochs, after the others; python_loader_vs_neighbor_loader_<variant> = its epoch over the
# variant's, target >= 8; 0 skips it).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/python-bench-out}
WORK=${WORK:-/tmp/gs-gpu-bench}
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
EPOCHS=${EPOCHS:-3}
PYTHON=${PYTHON:-python3}
SERVER_PREFETCH=${SERVER_PREFETCH:-8}
RUN_TIMEOUT=${RUN_TIMEOUT:-240}
PY_PREFETCH=${PY_PREFETCH:-4}
DEVICE=${DEVICE:-cuda}
NL_WORKERS=${NL_WORKERS:-12}
NL_EPOCHS=${NL_EPOCHS:-2}
declare -A PY_TIME=()
GEN_ARGS=${GEN_ARGS:-}
mkdir -p "$OUT" "$WORK"
: >"$OUT/results.jsonl"

if [[ -z ${DEVICE_CMAKE_ARGS:-} && -f .devdeps/use-deps.sh ]]; then
  # shellcheck disable=SC1091
  source .devdeps/use-deps.sh .devdeps
fi

log() { echo "[python-bench +$((SECONDS))s] $*" >&2; }
emit() { echo "$1" | tee -a "$OUT/results.jsonl"; }
die() {
  log "$*"
  emit "{\"name\": \"python_loader_bench\", \"error\": \"$*\"}"
  exit 1
}

CORES=$(nproc)
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
PY_EXE=$("$PYTHON" -c 'import sys; print(sys.executable)') || die "no $PYTHON"
log "machine: $CORES cores, GPU ${GPU_NAME:-none}; $PY_EXE: $("$PY_EXE" -c 'import torch, torch_geometric as g; print("torch", torch.__version__, "pyg", g.__version__)' 2>&1 | tail -1)"

GRAPH=$WORK/products
if [[ ! -s $GRAPH/edge_index.npy ]]; then
  log "generating the graph into $GRAPH (background)"
  # shellcheck disable=SC2086
  ("$PY_EXE" tests/bench/gen_products_like.py --out "$GRAPH" --threads 6 $GEN_ARGS \
    >"$OUT/generate.log" 2>&1; echo $? >"$WORK/generate.status") &
  GEN_PID=$!
else
  echo 0 >"$WORK/generate.status"
  GEN_PID=""
fi

# The carried zlib1g-dev has only a non-PIC libz.a (its libz.so points at a package not carried):
# the shared module cannot link it, so take the machine's own libz.so.1 (seen on the GPU machine).
ZLIB_SO=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null || true)
[[ -n $ZLIB_SO ]] && DEVICE_CMAKE_ARGS="${DEVICE_CMAKE_ARGS:-} -DZLIB_LIBRARY=$ZLIB_SO"
log "configuring $BUILD (python module for $PY_EXE)"
# shellcheck disable=SC2086
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${DEVICE_CMAKE_ARGS:-} \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DGRAPHSHARD_PYTHON="$PY_EXE" >"$OUT/cmake.log" 2>&1 ||
  { tail -40 "$OUT/cmake.log" >&2; die "cmake configure failed (see $OUT/cmake.log)"; }
grep -E "graphshard (trainer|python)" "$OUT/cmake.log" >&2 || true
if grep -q "module NOT built" "$OUT/cmake.log"; then
  grep -A4 "module NOT built" "$OUT/cmake.log" >&2
  die "the Python module cannot be built for $PY_EXE (see $OUT/cmake.log)"
fi
log "building with -j$JOBS"
cmake --build "$BUILD" -j"$JOBS" --target graphshard-partition graphshard-server \
  graphshard-health graphshard-trainer graphshard_python_module >"$OUT/build.log" 2>&1 ||
  { grep -E "error|Error" -A3 "$OUT/build.log" | head -60 >&2; die "build failed"; }
BIN=$BUILD/bin
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
"$PY_EXE" -c "import graphshard, torch_geometric" 2>"$OUT/import.log" ||
  { cat "$OUT/import.log" >&2; die "import graphshard failed"; }

if [[ -n $GEN_PID ]]; then wait "$GEN_PID"; fi
[[ $(cat "$WORK/generate.status") == 0 ]] || { tail -20 "$OUT/generate.log" >&2; die "generate failed"; }
PART=$WORK/p2_random
if [[ ! -s $PART/graphshard.json ]]; then
  log "partitioning into 2 parts"
  "$BIN/graphshard-partition" partition --input "$GRAPH" --parts 2 --method random --seed 1 \
    --out "$PART" >"$OUT/partition.log" 2>&1 || die "partition failed (see $OUT/partition.log)"
fi

# The servers share the cores, leaving 2 for the training process (loop + input thread).
THREADS=$(((CORES - 2) / 2))
((THREADS >= 1)) || THREADS=1

# Epoch time of a run: the median of its epochs after the first (the first pays for CUDA's start
# and torch.compile), with the last epoch beside it. A metrics / stdout file in, "steady last n"
# out.
epoch_times() {
  "$PY_EXE" -c '
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
e = [r for r in rows if r.get("event", "epoch") == "epoch" and "epoch" in r and "time_s" in r]
t = [r["time_s"] for r in e]
steady = statistics.median(t[1:]) if len(t) > 1 else t[-1]
print(round(steady, 4), t[-1], len(t))' "$1" 2>/dev/null
}

# The servers of the Python runs (the C++ trainer's launcher starts its own, with the same
# settings; the idle set costs memory, not CPU), so that rounds can alternate the two.
REG=$WORK/py_registry
rm -rf "$REG"
SERVER_PIDS=()
for k in 0 1; do
  "$BIN/graphshard-server" --partition "$PART" --part "$k" --listen 127.0.0.1:0 --registry "$REG" \
    --threads "$THREADS" --prefetch "$SERVER_PREFETCH" >"$OUT/py_server_$k.log" 2>&1 &
  SERVER_PIDS+=($!)
done
stop_servers() { kill "${SERVER_PIDS[@]}" 2>/dev/null; wait "${SERVER_PIDS[@]}" 2>/dev/null; }
trap stop_servers EXIT

# cpp: the C++ trainer through the launcher (as gpu_train_bench.sh's 1gpu_2srv_reg).
run_cpp() {
  local round=$1 metrics=$OUT/cpp.r$1.metrics.jsonl
  log "round $round, cpp: 2 servers x $THREADS threads, 1 trainer"
  rm -f "$metrics"
  timeout "$RUN_TIMEOUT" deploy/graphshard-launch --partition "$PART" --servers 2 --trainers 1 \
    --bin-dir "$BIN" --server-wait-s 120 --server-arg=--threads=$THREADS \
    --server-arg=--prefetch=$SERVER_PREFETCH -- \
    --device "$DEVICE" --model sage --hidden 256 --fanouts 15,10,5 --batch-size 1024 \
    --epochs "$EPOCHS" --eval-every 0 --lr 0.003 --dropout 0.5 --seed 1 --h2d registered \
    --prefetch 4 --threads 4 --metrics-file "$metrics" --progress-every-s 5 \
    >"$OUT/cpp.r$round.stdout" 2>"$OUT/cpp.r$round.stderr"
  local status=$? times
  times=$(epoch_times "$metrics")
  cpp_time=""
  if ((status != 0)) || [[ -z $times ]]; then
    tail -15 "$OUT/cpp.r$round.stderr" >&2
    emit "{\"name\": \"python_loader_cpp_trainer\", \"round\": $round, \"error\": \"exit status $status\"}"
    return
  fi
  local last epochs
  read -r cpp_time last epochs <<<"$times"
  emit "{\"name\": \"python_loader_cpp_trainer\", \"round\": $round, \"value\": $cpp_time, \"unit\": \"s/epoch\", \"statistic\": \"median of epochs 2..$epochs\", \"last_epoch_s\": $last, \"epochs\": $epochs, \"gpu\": \"$GPU_NAME\", \"cores\": $CORES, \"server_threads\": $THREADS}"
}

# pyg: the example, against the servers started above. The example as PyG users run it today
# (untrimmed, fp32) and with its defaults, PyG's own trim_to_layer + TF32 (the C++ trainer's
# defaults: the same work per step, the same precision).
run_pyg() {
  local round=$1 variant=$2 vflags=()
  case $variant in
    untrimmed_fp32) vflags=(--trim off --precision fp32) ;;
    trimmed_bf16) vflags=(--trim on --precision bf16) ;;
    trimmed_bf16_csr) vflags=(--trim on --precision bf16 --edge-index csr) ;;
    untrimmed_bf16_csr) vflags=(--trim off --precision bf16 --edge-index csr) ;;
    trimmed_tf32) vflags=(--trim on --precision tf32) ;;
    bipartite_tf32) vflags=(--trim bipartite --precision tf32) ;;
    bipartite_bf16) vflags=(--trim bipartite --precision bf16) ;;
    trimmed_tf32_fused) vflags=(--trim on --precision tf32 --fused-adam) ;;
    trimmed_tf32_compiled) vflags=(--trim on --precision tf32 --compile) ;;
    trimmed_tf32_compiled_fused) vflags=(--trim on --precision tf32 --compile --fused-adam) ;;
    untrimmed_tf32_compiled) vflags=(--trim off --precision tf32 --compile) ;;
    bipartite_tf32_compiled) vflags=(--trim bipartite --precision tf32 --compile) ;;
    trimmed_tf32_cudagraphs) vflags=(--trim on --precision tf32 --cuda-graphs) ;;
    trimmed_tf32_cudagraphs_fused) vflags=(--trim on --precision tf32 --cuda-graphs --fused-adam) ;;
    bipartite_tf32_cudagraphs) vflags=(--trim bipartite --precision tf32 --cuda-graphs) ;;
    *) emit "{\"name\": \"python_loader_pyg\", \"error\": \"unknown variant $variant\"}"; return ;;
  esac
  log "round $round, pyg $variant: 2 servers x $THREADS threads, examples/pyg_products_train.py"
  local stdout=$OUT/pyg_$variant.r$round.stdout
  timeout "$RUN_TIMEOUT" "$PY_EXE" examples/pyg_products_train.py --registry "$REG" \
    --epochs "$EPOCHS" --device "$DEVICE" --prefetch "$PY_PREFETCH" --hidden 256 \
    --fanouts 15,10,5 --batch-size 1024 --lr 0.003 --seed 1 "${vflags[@]}" \
    --profile-steps "${PROFILE_STEPS:-0}" ${PROFILE_TRACE:+--profile-trace "$OUT/trace_$variant.r$round.json"} \
    >"$stdout" 2>"$OUT/pyg_$variant.r$round.stderr"
  local status=$? times details
  times=$(epoch_times "$stdout")
  details=$("$PY_EXE" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
e = [r for r in lines if "epoch" in r][-1]
print(json.dumps({"data_wait_s": e["data_wait_s"], "main_thread_cpu_s": e.get("main_thread_cpu_s"),
                  "read_ahead_cpu_s": e.get("read_ahead_cpu_s"), "build_cpu_s": e.get("build_cpu_s"),
                  "loss": e.get("loss"), "shapes": lines[-1].get("shapes"),
                  "cuda_host_registered": lines[-1].get("cuda_host_registered")})[1:-1])' \
    "$stdout" 2>/dev/null)
  if ((status != 0)) || [[ -z $times || -z $details ]]; then
    tail -15 "$OUT/pyg_$variant.r$round.stderr" >&2
    emit "{\"name\": \"python_loader_pyg_$variant\", \"round\": $round, \"error\": \"exit status $status (124 = timeout after ${RUN_TIMEOUT}s)\"}"
    return
  fi
  local py_time last epochs
  read -r py_time last epochs <<<"$times"
  PY_TIME[$variant]=$py_time
  emit "{\"name\": \"python_loader_pyg_$variant\", \"round\": $round, \"value\": $py_time, \"unit\": \"s/epoch\", \"statistic\": \"median of epochs 2..$epochs\", \"last_epoch_s\": $last, $details, \"epochs\": $epochs, \"gpu\": \"$GPU_NAME\", \"cores\": $CORES, \"server_threads\": $THREADS}"
  local profile
  profile=$(grep -m1 '"profile_steps"' "$stdout")
  [[ -n $profile ]] && emit "{\"name\": \"python_loader_profile_$variant\", \"round\": $round, ${profile#\{}"
  if [[ -n ${cpp_time:-} ]]; then
    emit "$("$PY_EXE" -c '
import json, sys
py, cpp = float(sys.argv[1]), float(sys.argv[2])
print(json.dumps({"name": "python_loader_epoch_ratio_" + sys.argv[3], "round": int(sys.argv[4]),
                  "value": round(py / cpp, 3), "unit": "x", "baseline": cpp, "target_max": 1.2,
                  "within_target": py / cpp <= 1.2}))' \
      "$py_time" "$cpp_time" "$variant" "$round")"
  fi
}

# ROUNDS rounds, each the C++ trainer and then every variant: the machine's drift shows as the
# spread of one variant's ratio over the rounds.
for ((round = 1; round <= ${ROUNDS:-1}; round++)); do
  run_cpp "$round"
  for variant in ${PYG_VARIANTS:-untrimmed_fp32 trimmed_tf32 trimmed_tf32_compiled trimmed_tf32_cudagraphs_fused}; do
    run_pyg "$round" "$variant"
  done
done
stop_servers

# PyG's own NeighborLoader (NL_WORKERS workers, its sampler in each) on the same graph, in the
# same call: each variant's speed-up over it (target >= 8).
if [[ ${NEIGHBOR_LOADER:-1} == 1 ]]; then
  log "run PyG NeighborLoader: $NL_WORKERS workers, $NL_EPOCHS epochs"
  timeout "$RUN_TIMEOUT" "$PY_EXE" tests/bench/pyg_neighbor_loader.py --graph "$GRAPH" \
    --epochs "$NL_EPOCHS" --workers "$NL_WORKERS" --device "$DEVICE" \
    >"$OUT/neighbor_loader.stdout" 2>"$OUT/neighbor_loader.stderr"
  status=$?
  NL=$("$PY_EXE" -c '
import json, sys
last = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][-1]
print(last["last_epoch_time_s"], last["last_data_wait_s"], last["setup_s"])' \
    "$OUT/neighbor_loader.stdout" 2>/dev/null)
  if ((status != 0)) || [[ -z $NL ]]; then
    tail -5 "$OUT/neighbor_loader.stderr" >&2
    why=$(tail -n 1 "$OUT/neighbor_loader.stdout" 2>/dev/null | tr -d '"\\' | cut -c1-300)
    emit "{\"name\": \"python_loader_pyg_neighbor_loader\", \"error\": \"exit status $status: $why\"}"
  else
    read -r nl_time nl_wait nl_setup <<<"$NL"
    emit "{\"name\": \"python_loader_pyg_neighbor_loader\", \"value\": $nl_time, \"unit\": \"s/epoch\", \"data_wait_s\": $nl_wait, \"setup_s\": $nl_setup, \"workers\": $NL_WORKERS, \"epochs\": $NL_EPOCHS, \"gpu\": \"$GPU_NAME\"}"
    for variant in "${!PY_TIME[@]}"; do
      emit "$("$PY_EXE" -c '
import json, sys
nl, py = float(sys.argv[1]), float(sys.argv[2])
print(json.dumps({"name": "python_loader_vs_neighbor_loader_" + sys.argv[3],
                  "value": round(nl / py, 2), "unit": "x", "baseline": nl, "target_min": 8,
                  "within_target": nl / py >= 8}))' "$nl_time" "${PY_TIME[$variant]}" "$variant")"
    done
  fi
fi
log "done in ${SECONDS}s; results in $OUT/results.jsonl"
