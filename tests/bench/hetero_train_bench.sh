#!/usr/bin/env bash
# Heterogeneous training benchmark (ogbn-mag-sized graph), one command on the GPU machine from the
# repository root:
#
#   source .devdeps/use-deps.sh .devdeps && bash tests/bench/hetero_train_bench.sh
#
# Builds graphshard-partition, -server, -health, -trainer and server_bench (Release, CUDA arch
# 90) while it generates the ogbn-mag-sized graph (`generate --kind mag --scale full --format
# npy --seed 1`: 736,389 papers with 128 features and 349 classes, 1.94 M nodes of 4 types,
# 42 M edges of 7 types), partitions it randomly into 2 parts, then:
#  1. server_bench on the 2 parts, 1 / 2 / 4 clients (CLIENTS), [15,10,5] x 1024: batches/s.
#  2. Heterogeneous SAGE-256, [15,10,5], batch 1024, 2 servers + 1 trainer (cuda:0), per
#     config in CONFIGS, each `<bin>_<trim>_<precision>` with bin `new` (this tree's build) or
#     `base` (the binaries in BASE_BIN, e.g. a build of the commit before a change; skipped
#     when unset), trim `untrimmed|trimmed`, precision `fp32|tf32|bf16`.
#     A config in FULL runs EPOCHS whole epochs and reports the last epoch's time (s/epoch),
#     step time, data wait and peak GPU memory from the metrics file. The others run for
#     WINDOW_S seconds of training and report the step time over the steps between the first
#     progress line after SKIP_S seconds and the last one (no epoch time: nothing is
#     extrapolated).
# Prints JSON lines (name, value, unit, ...) to stdout and $OUT/results.jsonl; logs in $OUT.
# Knobs: OUT (./hetero-bench-out), WORK (/tmp/gs-hetero-bench), BUILD (build-gpu), JOBS
# (nproc), EPOCHS (2), WINDOW_S (50), SKIP_S (15), CONFIGS, FULL, CLIENTS ("1 2 4"), BIN_DIR
# (no build), DEVICE (cuda), TRAINER_EXTRA (more trainer flags, word-split, e.g.
# "--feature-store server").
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/hetero-bench-out}
WORK=${WORK:-/tmp/gs-hetero-bench}
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
EPOCHS=${EPOCHS:-2}
WINDOW_S=${WINDOW_S:-50}
SKIP_S=${SKIP_S:-15}
CONFIGS=${CONFIGS:-"base_untrimmed_fp32 base_trimmed_bf16 new_untrimmed_fp32 new_trimmed_fp32 new_trimmed_bf16"}
FULL=${FULL:-"new_trimmed_bf16"}
CLIENTS=${CLIENTS:-"1 2 4"}
DEVICE=${DEVICE:-cuda}
CORES=$(nproc)
mkdir -p "$OUT" "$WORK"
: >"$OUT/results.jsonl"
log() { echo "[$(date +%T)] $*" >&2; }
emit() { echo "$1"; echo "$1" >>"$OUT/results.jsonl"; }
die() { emit "{\"name\": \"hetero_bench\", \"error\": \"$1\"}"; exit 1; }
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)

GRAPH=$WORK/mag
PARTS=$WORK/p2_random
BIN=${BIN_DIR:-$BUILD/bin}
if [[ -z ${BIN_DIR:-} ]]; then
  log "configuring $BUILD"
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${DEVICE_CMAKE_ARGS:-} \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log" >&2; die "cmake configure failed"; }
  log "building with -j$JOBS"
  cmake --build "$BUILD" -j"$JOBS" --target graphshard-partition graphshard-server \
    graphshard-health graphshard-trainer server_bench >"$OUT/build.log" 2>&1 ||
    { grep -E "error" -A3 "$OUT/build.log" | head -40 >&2; die "build failed"; }
  log "built"
fi
if [[ ! -s $PARTS/graphshard.json ]]; then
  if [[ ! -d $GRAPH ]]; then
    "$BIN/graphshard-partition" generate --kind mag --scale full --seed 1 --format npy \
      --out "$GRAPH" >"$OUT/generate.log" 2>&1 || die "generate failed (see generate.log)"
    log "generated: $(tail -1 "$OUT/generate.log")"
  fi
  "$BIN/graphshard-partition" partition --input "$GRAPH" --parts 2 --method random --seed 1 \
    --out "$PARTS" >"$OUT/partition.log" 2>&1 || die "partition failed (see partition.log)"
  log "partitioned"
fi

# 1. Server throughput for the heterogeneous graph.
if [[ -n $CLIENTS && -x $BIN/server_bench ]]; then
  log "server_bench, clients $CLIENTS"
  timeout 300 "$BIN/server_bench" --partition "$PARTS" --clients "${CLIENTS// /,}" \
    --batches 40 --batch-size 1024 --fanouts 15,10,5 --threads $((CORES / 2)) \
    >"$OUT/server_bench.jsonl" 2>"$OUT/server_bench.log" ||
    emit "{\"name\": \"hetero_server_bench\", \"error\": \"exit status $? (see server_bench.log)\"}"
  while read -r l; do
    [[ $l == "{"* ]] && emit "$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["name"]="hetero_"+r["name"]; r["graph"]="mag-full (random 2 parts)"; print(json.dumps(r))' "$l")"
  done <"$OUT/server_bench.jsonl"
fi

# 2. Training runs.
run_config() {
  local name=$1 bin trim precision
  IFS=_ read -r bin trim precision <<<"$name"
  local bindir=$BIN
  if [[ $bin == base ]]; then
    [[ -n ${BASE_BIN:-} ]] || { emit "{\"name\": \"hetero_train_$name\", \"error\": \"no BASE_BIN\"}"; return; }
    bindir=$BASE_BIN
  fi
  local t
  case $trim in untrimmed) t=off ;; trimmed) t=on ;; *) emit "{\"name\": \"hetero_train_$name\", \"error\": \"bad trim\"}"; return ;; esac
  local full=0 epochs=1 limit=$((WINDOW_S + 60))
  [[ " $FULL " == *" $name "* ]] && { full=1; epochs=$EPOCHS; limit=900; }
  local metrics=$OUT/$name.metrics.jsonl
  rm -f "$metrics"
  local threads=$(((CORES - 2) / 2))
  log "run $name (full=$full)"
  local t0=$SECONDS
  # shellcheck disable=SC2086  # TRAINER_EXTRA: several words
  timeout --signal=TERM "$limit" deploy/graphshard-launch --partition "$PARTS" --servers 2 \
    --trainers 1 --bin-dir "$bindir" --server-wait-s 180 --server-arg=--threads=$threads -- \
    --device "$DEVICE" --model sage --hidden 256 --fanouts 15,10,5 --batch-size 1024 \
    --epochs "$epochs" --eval-every 0 --lr 0.003 --dropout 0.5 --seed 1 --threads 4 \
    --trim "$t" --precision "$precision" --metrics-file "$metrics" --progress-every-s 5 \
    ${TRAINER_EXTRA:-} >"$OUT/$name.stdout" 2>"$OUT/$name.stderr" &
  local pid=$!
  if ((full == 0)); then
    # Training starts at the first progress line; stop WINDOW_S seconds after it.
    local waited=0
    while kill -0 "$pid" 2>/dev/null && ! grep -q "progress:" "$OUT/$name.stderr" && ((waited < 240)); do
      sleep 1; waited=$((waited + 1))
    done
    sleep "$WINDOW_S"
    pkill -TERM -P "$pid" 2>/dev/null; kill -TERM "$pid" 2>/dev/null
  fi
  wait "$pid"
  local status=$? wall=$((SECONDS - t0))
  pkill -x graphshard-serv 2>/dev/null; pkill -x graphshard-trai 2>/dev/null; sleep 1
  python3 - "$name" "$metrics" "$OUT/$name.stderr" "$full" "$SKIP_S" "$GPU_NAME" "$CORES" \
    "$status" "$wall" <<'PY' | while read -r l; do emit "$l"; done
import json, re, sys
name, metrics, log, full, skip_s, gpu, cores, status, wall = sys.argv[1:]
base = {"name": f"hetero_train_{name}", "config": {"graph": "mag-full (random 2 parts)",
        "model": "hetero-sage-3x256", "fanouts": [15, 10, 5], "batch_size": 1024,
        "servers": 2, "trainers": 1, "gpu": gpu, "cores": int(cores)}, "run_wall_s": int(wall)}
if full == "1":
    try:
        epochs = [r for r in map(json.loads, open(metrics)) if r.get("event") == "epoch"]
    except OSError:
        epochs = []
    if not epochs:
        base["error"] = f"no epoch finished (exit status {status})"
        print(json.dumps(base)); sys.exit()
    last = epochs[-1]
    base.update({"value": round(last["time_s"], 3), "unit": "s/epoch",
                 "epoch_times_s": [round(r["time_s"], 3) for r in epochs],
                 "step_time_s": round(last["step_time_s"], 5), "steps": last["steps"],
                 "data_wait_fraction": round(last["data_wait_fraction"], 4),
                 "peak_gpu_memory_mib": last.get("peak_gpu_memory_mib")})
    print(json.dumps(base)); sys.exit()
# Window: elapsed = s/step x steps done; the step time between the first line past skip_s
# seconds and the last line.
pts = []
for line in open(log):  # the launcher prefixes the trainer's progress lines to its stderr
    m = re.search(r"step (\d+)/(\d+) .*? ([\d.]+) s/step", line)
    if m:
        done, per = int(m.group(1)), float(m.group(3))
        pts.append((done * per, done, int(m.group(2))))
pts = [p for p in pts if p[0] >= float(skip_s)]
if len(pts) < 2 or pts[-1][1] == pts[0][1]:
    base["error"] = f"fewer than 2 progress lines after {skip_s} s (exit status {status})"
    print(json.dumps(base)); sys.exit()
step = (pts[-1][0] - pts[0][0]) / (pts[-1][1] - pts[0][1])
base.update({"value": round(step, 5), "unit": "s/step", "steps_measured": pts[-1][1] - pts[0][1],
             "steps_per_epoch": pts[-1][2]})
print(json.dumps(base))
PY
}
for c in $CONFIGS; do run_config "$c"; done
log "done"
