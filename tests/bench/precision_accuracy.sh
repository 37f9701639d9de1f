#!/usr/bin/env bash
# Accuracy of --precision bf16 against fp32 on Cora, on the CPU: for each
# model (MODELS, default "sage gcn") and seed 1..SEEDS (5), one run of 2 servers + 1 trainer
# (deploy/graphshard-launch; Cora in 2 random parts, undirected), the same settings in both
# precisions, trimming on (the default). Prints one JSON line per run (test_acc, the summary's
# step time) and per model the mean test accuracy of each precision and their difference in
# points, with fp32 as the baseline. Nothing is estimated: a failed run prints "error".
#
#   tests/bench/precision_accuracy.sh [BIN_DIR]     # default build/bin
#
# Knobs: MODELS, SEEDS, EPOCHS (40), PRECISIONS ("fp32 bf16"), TRIM (on), RUN_TIMEOUT (300 s).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$(readlink -f "${1:-$ROOT/build/bin}")
MODELS=${MODELS:-"sage gcn"}
SEEDS=${SEEDS:-5}
EPOCHS=${EPOCHS:-40}
PRECISIONS=${PRECISIONS:-"fp32 bf16"}
TRIM=${TRIM:-on}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/graphshard-precision.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

for b in graphshard-partition graphshard-server graphshard-health graphshard-trainer; do
  [[ -x $BIN/$b ]] || { echo "{\"name\": \"precision_accuracy\", \"error\": \"$BIN/$b not built\"}"; exit 1; }
done
timeout 120 "$BIN/graphshard-partition" partition --input "$ROOT/tests/data/cora" --parts 2 \
  --method random --undirected --seed 1 --out "$WORK/cora2" >"$WORK/partition.log" 2>&1 ||
  { cat "$WORK/partition.log" >&2; echo '{"name": "precision_accuracy", "error": "partition failed"}'; exit 1; }

# Per model: the settings of the e2e tests (tests/e2e/launch_cora*.sh).
model_flags() {
  case $1 in
    sage) echo "--model sage --hidden 64 --fanouts 10,5 --batch-size 64 --weight-decay 5e-4" ;;
    gcn) echo "--model gcn --hidden 32 --fanouts 10,10 --batch-size 32 --weight-decay 5e-4 --normalize-features" ;;
    *) echo "unknown model $1" >&2; exit 2 ;;
  esac
}

for model in $MODELS; do
  for precision in $PRECISIONS; do
    for seed in $(seq 1 "$SEEDS"); do
      name=${model}_${precision}_seed$seed
      # shellcheck disable=SC2046
      timeout "$RUN_TIMEOUT" "$ROOT/deploy/graphshard-launch" --partition "$WORK/cora2" \
        --servers 2 --trainers 1 --bin-dir "$BIN" --registry "$WORK/registry" \
        --server-wait-s 60 -- $(model_flags "$model") --epochs "$EPOCHS" --eval-every "$EPOCHS" \
        --seed "$seed" --precision "$precision" --trim "$TRIM" \
        >"$WORK/$name.stdout" 2>"$WORK/$name.stderr"
      status=$?
      line=$(tail -n 1 "$WORK/$name.stdout")
      if ((status != 0)) || [[ $line != \{* ]]; then
        tail -5 "$WORK/$name.stderr" >&2
        echo "{\"name\": \"precision_accuracy_run\", \"run\": \"$name\", \"error\": \"exit status $status\"}"
        continue
      fi
      python3 -c '
import json, sys
s = json.loads(sys.argv[1])
print(json.dumps({"name": "precision_accuracy_run", "model": sys.argv[2], "precision": sys.argv[3],
                  "seed": int(sys.argv[4]), "trim": sys.argv[5], "epochs": s["epochs"],
                  "test_acc": s["test_acc"], "val_acc": s["val_acc"],
                  "step_time_s": s["step_time_s"]}))' "$line" "$model" "$precision" "$seed" "$TRIM" |
        tee -a "$WORK/runs.jsonl"
    done
  done
done

python3 - "$WORK/runs.jsonl" <<'PY'
import json, os, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])] if os.path.exists(sys.argv[1]) else []
by = {}
for r in runs:
    by.setdefault((r["model"], r["precision"]), []).append(r)
for model in sorted({m for m, _ in by}):
    base = by.get((model, "fp32"))
    for (m, precision), rs in sorted(by.items()):
        if m != model:
            continue
        accs = [r["test_acc"] for r in rs]
        line = {"name": f"cora_{model}_{precision}_test_acc", "value": round(statistics.mean(accs), 4),
                "unit": "fraction", "runs": len(accs), "min": min(accs), "max": max(accs),
                "step_time_s": round(statistics.mean(r["step_time_s"] for r in rs), 5)}
        if base and precision != "fp32":
            b = statistics.mean(r["test_acc"] for r in base)
            line.update({"baseline": round(b, 4),
                         "difference_points": round(100 * (statistics.mean(accs) - b), 2)})
        print(json.dumps(line))
PY
