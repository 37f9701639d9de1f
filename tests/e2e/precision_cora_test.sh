#!/usr/bin/env bash
# --precision bf16 against fp32 on Cora, on the CPU: GraphSAGE and GCN, 5
# seeds each, 2 servers + 1 trainer per run (tests/bench/precision_accuracy.sh, which prints
# every run and the means). Every run must finish, and bf16's mean test accuracy must be
# within 1 point of fp32's for each model. Fixed seeds on one machine: deterministic, so a
# failure is a real difference, not noise.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer

note "5 seeds x {fp32, bf16} x {sage, gcn} on Cora"
TMPDIR=$WORK timeout 900 bash "$SRC/tests/bench/precision_accuracy.sh" "$BIN" >"$WORK/out.jsonl" ||
  { show "$WORK/out.jsonl"; fail "precision_accuracy.sh exited with status $?"; }
show "$WORK/out.jsonl"
python3 - "$WORK/out.jsonl" <<'PY' || fail "bf16 accuracy check failed"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
runs = [l for l in lines if l["name"] == "precision_accuracy_run"]
assert all("error" not in r for r in runs), [r for r in runs if "error" in r]
assert len(runs) == 2 * 2 * 5, f"{len(runs)} runs"
for model in ("sage", "gcn"):
    bf16 = next(l for l in lines if l["name"] == f"cora_{model}_bf16_test_acc")
    assert bf16["runs"] == 5 and bf16["baseline"] > 0.75, bf16
    assert abs(bf16["difference_points"]) <= 1.0, bf16
    print(f"{model}: fp32 {bf16['baseline']} bf16 {bf16['value']} ({bf16['difference_points']:+} points)",
          file=sys.stderr)
PY
[[ -z $(procs_in_work) ]] || fail "processes left behind"
note "ok"
