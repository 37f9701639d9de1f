#!/usr/bin/env bash
# tests/bench/scaling_bench.sh as a user runs it, on the CPU with a tiny products-shaped graph:
# one round of two variants (queue depth 1; depth 3 with the servers niced and torch's
# aggregation, which the CPU uses anyway), each with its
# 1-GPU-config baseline, 2 CPU trainers standing in for the GPUs. Checks the per-run lines carry
# their variant and round, that every variant has an epoch time and a speed-up over the same
# round's baseline, and that an unknown variant part is refused before anything runs: the
# script's plumbing, not its speed.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer

if VARIANTS="q1 q3_fast" BIN_DIR=$BIN OUT=$WORK/bad bash "$SRC/tests/bench/scaling_bench.sh" \
  >"$WORK/bad.out" 2>"$WORK/bad.err"; then
  fail "an unknown variant part was accepted"
fi
grep -q "unknown part 'fast' of variant 'q3_fast'" "$WORK/bad.err" || fail "bad variant: $(cat "$WORK/bad.err")"
[[ ! -s $WORK/bad/runs.jsonl ]] || fail "a run started before the variants were checked"

# The benchmark's scripts call python3 (with NumPy): the one CMake found, first on the PATH.
mkdir -p "$WORK/py"
ln -s "$(command -v "${GRAPHSHARD_PYTHON:-python3}")" "$WORK/py/python3"
export PATH=$WORK/py:$PATH

OUTDIR=$WORK/out
ONE=1gpu_2srv MANY=2gpu_2srv DEVICE=cpu SHARE_GPU=1 VARIANTS="q1 q3_nice_torchagg" ROUNDS=1 EPOCHS=3 \
  GEN_ARGS="--num-nodes 3000 --num-edges 30000" BIN_DIR=$BIN WORK=$WORK/bench OUT=$OUTDIR \
  TOTAL_BUDGET=400 timeout 420 bash "$SRC/tests/bench/scaling_bench.sh" >"$WORK/stdout" \
  2>"$WORK/stderr" || { tail -20 "$WORK/stderr" >&2; fail "scaling_bench.sh exited $?"; }
python3 - "$OUTDIR/runs.jsonl" "$WORK/stdout" <<'PY' || fail "scaling_bench.sh results (above)"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
summary = json.loads(open(sys.argv[2]).read().splitlines()[-1])
assert not [r for r in runs if "error" in r], runs
seen = {(r["variant"], r["name"]) for r in runs}
assert seen == {("q1", "gpu_train_1gpu_2srv"), ("q1", "gpu_train_2gpu_2srv"),
                ("q3_nice_torchagg", "gpu_train_1gpu_2srv"),
                ("q3_nice_torchagg", "gpu_train_2gpu_2srv")}, seen
assert {r["aggregation"] for r in runs if r["variant"] == "q1"} == {"fused"}, runs
assert {r["aggregation"] for r in runs if r["variant"] != "q1"} == {"torch"}, runs
assert all(r["round"] == 1 and r["steady_epoch_time_s"] > 0 for r in runs), runs
assert summary["name"] == "scaling_bench" and summary["errors"] == 0, summary
for v in ("q1", "q3_nice_torchagg"):
    e = summary["variants"][v]
    assert e["many_median_s"] > 0 and len(e["speedup_vs_one_same_setting"]) == 1, e
assert {r["sampler"] for r in runs} == {"server"}, runs
assert set(summary["one_s"]) == {"free/off/fused/server round 1",
                                 "nice/off/torch/server round 1"}, summary["one_s"]
print("scaling_bench plumbing ok:", {v: e["speedup_vs_one_same_setting"]
                                     for v, e in summary["variants"].items()})
PY
