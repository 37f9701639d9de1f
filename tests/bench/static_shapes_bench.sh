#!/usr/bin/env bash
# --static-shapes on against off, in one call on the GPU machine, from the repository root:
#
#   source .devdeps/use-deps.sh .devdeps && bash tests/bench/static_shapes_bench.sh
#
# Runs tests/bench/gpu_train_bench.sh ROUNDS times (default 3) over CONFIGS (default
# "1gpu_2srv_reg_dev 2gpu_2srv_reg_dev": the products-shaped graph, 3-layer SAGE-256, every row
# on the GPU), alternating the trainer's --static-shapes off and on within each round (so both
# see the same machine), EPOCHS (4) epochs each. PROFILE=1 profiles every run (the trainer's
# --profile-dir; the summaries, not the traces, are kept). Every run's JSON line goes to
# $OUT/runs.jsonl with "run_label" (mode and round); the last line printed is the summary: per
# config and mode the median steady epoch, on/off, and per mode the 1 -> N GPU speedups.
# TRAINER_EXTRA adds flags to both modes. Other knobs as gpu_train_bench.sh's.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/static-shapes-bench-out}
ROUNDS=${ROUNDS:-3}
CONFIGS=${CONFIGS:-"1gpu_2srv_reg_dev 2gpu_2srv_reg_dev"}
EPOCHS=${EPOCHS:-4}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
: >"$OUT/runs.jsonl"

for round in $(seq 1 "$ROUNDS"); do
  for mode in off on; do
    dir="$OUT/$mode-$round"
    EPOCHS=$EPOCHS CONFIGS=$CONFIGS OUT=$dir TOTAL_BUDGET=${TOTAL_BUDGET:-560} \
      TRAINER_EXTRA="--static-shapes $mode ${TRAINER_EXTRA:-}" \
      bash tests/bench/gpu_train_bench.sh >"$dir.log" 2>&1
    # The traces are large; the summaries are what the runs are compared by.
    find "$dir" -name 'trace_rank*.json' -delete 2>/dev/null
    "$PYTHON" - "$dir/results.jsonl" "$mode" "$round" >>"$OUT/runs.jsonl" <<'EOF'
import json, sys
path, mode, rnd = sys.argv[1:]
try:
    lines = open(path).read().splitlines()
except OSError as e:
    lines = [json.dumps({"name": "gpu_train_bench", "error": str(e)})]
for line in lines:
    if line.startswith("{"):
        r = json.loads(line)
        r["run_label"] = f"static-shapes {mode}, round {rnd}"
        r["static_shapes"] = mode
        print(json.dumps(r))
EOF
    # The captures, and what padding cost (rows and edges over the real ones, per epoch).
    grep -h "captured as a CUDA graph\|static shapes:" "$dir"/*.stderr 2>/dev/null |
      sed "s/^/$mode-$round: /" >>"$OUT/captures.txt"
  done
done

"$PYTHON" - "$OUT/runs.jsonl" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in runs:
    if "error" in r or "steady_epoch_time_s" not in r:
        continue
    by.setdefault((r["name"], r["static_shapes"]), []).append(r["steady_epoch_time_s"])
median = {k: statistics.median(v) for k, v in by.items()}
summary = {"name": "static_shapes_bench", "unit": "s/epoch (steady, median over rounds)",
           "errors": sum(1 for r in runs if "error" in r),
           "epochs": {f"{n} {m}": {"median": round(t, 3), "runs": by[(n, m)]}
                      for (n, m), t in sorted(median.items())}}
names = sorted({n for n, _ in median})
summary["on_over_off"] = {n: round(median[(n, "on")] / median[(n, "off")], 3)
                          for n in names if (n, "on") in median and (n, "off") in median}
one = [n for n in names if n.startswith("gpu_train_1gpu")]
if one:
    summary["speedup_vs_1gpu"] = {
        f"{n} {m}": round(median[(one[0], m)] / median[(n, m)], 2)
        for n in names if n != one[0] for m in ("off", "on")
        if (n, m) in median and (one[0], m) in median}
if runs and "config" in runs[0]:
    summary["gpu"] = runs[0]["config"].get("gpu")
    summary["cores"] = runs[0]["config"].get("cores")
print(json.dumps(summary))
EOF
