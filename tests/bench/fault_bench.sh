#!/usr/bin/env bash
# Fault benchmark: what losing servers costs a training run. On the GPU
# machine, from the repository root, after building (deploy/build.sh or gpu_train_bench.sh's
# build-gpu):
#
#   BIN_DIR=build-gpu/bin bash tests/bench/fault_bench.sh
#
# Generates a products-like graph (graphshard-partition generate; NODES, default 200000),
# partitions it into 2 random parts and trains GraphSAGE (fanouts 15,10,5, batch 1024, EPOCHS
# epochs, default 3) with 2 trainers (DEVICE cuda: one GPU each, NCCL; DEVICE=cpu for a dry run)
# and 2 servers x 2 replicas through deploy/graphshard-launch, twice in the same invocation:
#   fault_free  no failure;
#   faulty      kill -9 of one server every KILL_EVERY seconds (default 20), round robin over
#               the 4 servers, each restarted by the launcher (--server-restarts).
# Prints JSON lines: per run the mean epoch time (from the trainers' --metrics-file); then
# {"name": "fault_epoch_time", "value": faulty, "baseline": fault_free, "ratio": ...} and
# {"name": "fault_weights_equal", "value": true|false} comparing the two runs' weights
# fingerprints (they must be equal: a resumed stream carries the same batches, and the
# trainers run --deterministic: CUDA's atomic index_add is not bitwise reproducible). Everything
# (logs, metrics) goes under $OUT (default ./fault-bench-out). A failed run prints a JSON line
# with "error"; nothing is estimated. Knobs: NODES, EPOCHS, KILL_EVERY, DEVICE, RUN_TIMEOUT,
# TRAINER_EXTRA (more trainer flags, e.g. "--hidden 16 --fanouts 5,5" for a CPU dry run).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN_DIR=${BIN_DIR:-$ROOT/build/bin}
OUT=${OUT:-$ROOT/fault-bench-out}
WORK=${WORK:-/tmp/gs-fault-bench}
NODES=${NODES:-200000}
EPOCHS=${EPOCHS:-3}
KILL_EVERY=${KILL_EVERY:-20}
DEVICE=${DEVICE:-cuda}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
mkdir -p "$OUT" "$WORK"
log() { echo "[fault-bench +${SECONDS}s] $*" >&2; }
emit() { echo "$1" | tee -a "$OUT/results.jsonl"; }
for b in graphshard-partition graphshard-server graphshard-health graphshard-trainer; do
  [[ -x $BIN_DIR/$b ]] || { emit "{\"name\": \"fault_bench\", \"error\": \"$BIN_DIR/$b not built\"}"; exit 1; }
done

if [[ ! -s $WORK/parts/graphshard.json ]]; then
  log "generating a products-like graph of $NODES nodes"
  if ! "$BIN_DIR/graphshard-partition" generate --kind products --seed 1 --num-nodes "$NODES" \
    --out "$WORK/input" >"$OUT/generate.log" 2>&1 ||
    ! "$BIN_DIR/graphshard-partition" partition --input "$WORK/input" --parts 2 --method random \
      --seed 1 --out "$WORK/parts" >"$OUT/partition.log" 2>&1; then
    emit '{"name": "fault_bench", "error": "generate/partition failed"}'
    exit 1
  fi
fi
TRAINER=(--model sage --epochs "$EPOCHS" --eval-every 0 --hidden 256 --fanouts "15,10,5"
         --batch-size 1024 --seed 1 --device "$DEVICE" --stall-timeout-s 10 --server-wait-s 120
         --deterministic --sampler server)  # the servers' streams are what a kill breaks
# shellcheck disable=SC2206  # word-split on purpose: more trainer flags (the later ones win)
TRAINER+=(${TRAINER_EXTRA:-})

# run NAME KILL(0|1): one launch; sets EPOCH_S (mean epoch time) and FP (rank 0's fingerprint).
run() {
  local name=$1 kill=$2
  rm -rf "$WORK/reg_$name"
  timeout "$RUN_TIMEOUT" "$ROOT/deploy/graphshard-launch" --partition "$WORK/parts" --trainers 2 \
    --bin-dir "$BIN_DIR" --registry "$WORK/reg_$name" --replicas 2 --server-restarts 1000 \
    -- "${TRAINER[@]}" --metrics-file "$OUT/$name.metrics.jsonl" \
    >"$OUT/$name.out" 2>"$OUT/$name.err" &
  local launcher=$! kills=0 victim=0 next=$((SECONDS + KILL_EVERY))
  while kill -0 "$launcher" 2>/dev/null; do
    if ((kill && SECONDS >= next)) && grep -q "starting 2 trainer" "$OUT/$name.err"; then
      local k=$((victim % 2)) r=$((victim / 2 % 2)) pid
      pid=$(pgrep -f -- "graphshard-server --partition $WORK/parts --part $k --replica $r " | head -n 1)
      if [[ -n $pid ]]; then
        kill -KILL "$pid" && kills=$((kills + 1))
        log "$name: killed part $k replica $r (pid $pid)"
      fi
      victim=$((victim + 1))
      next=$((SECONDS + KILL_EVERY))
    fi
    sleep 0.5
  done
  wait "$launcher"
  local status=$?
  FP=$(sed -n 's/^\[trainer 0\] rank 0 weights_fingerprint \([0-9a-f]*\)$/\1/p' "$OUT/$name.err")
  EPOCH_S=$(python3 -c '
import json, sys
t = [r["time_s"] for r in map(json.loads, open(sys.argv[1])) if r.get("event") == "epoch"]
print(sum(t) / len(t) if t else "")' "$OUT/$name.metrics.jsonl" 2>/dev/null)
  if ((status != 0)) || [[ -z $FP || -z $EPOCH_S ]]; then
    grep -v "progress:" "$OUT/$name.err" | tail -40 >&2  # what went wrong, in the caller's log
    emit "{\"name\": \"fault_bench_$name\", \"error\": \"launcher status $status (see $OUT/$name.err)\"}"
    return 1
  fi
  emit "{\"name\": \"fault_bench_$name\", \"value\": $EPOCH_S, \"unit\": \"s/epoch\", \"kills\": $kills, \"epochs\": $EPOCHS, \"device\": \"$DEVICE\", \"weights_fingerprint\": \"$FP\"}"
}

run fault_free 0 || exit 1
base_s=$EPOCH_S base_fp=$FP
run faulty 1 || exit 1
emit "$(python3 -c 'import json, sys
f, b = float(sys.argv[1]), float(sys.argv[2])
print(json.dumps({"name": "fault_epoch_time", "value": f, "unit": "s/epoch", "baseline": b,
                  "ratio": f / b, "kill_every_s": int(sys.argv[3])}))' "$EPOCH_S" "$base_s" "$KILL_EVERY")"
equal=false
[[ $FP == "$base_fp" ]] && equal=true
emit "{\"name\": \"fault_weights_equal\", \"value\": $equal, \"fault_free\": \"$base_fp\", \"faulty\": \"$FP\"}"
