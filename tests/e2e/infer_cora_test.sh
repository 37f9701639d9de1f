#!/usr/bin/env bash
# Full-graph inference on Cora, 2 servers + 2 trainers as processes through
# the launcher, for GraphSAGE and GCN:
# 1. train a few epochs with --checkpoint-dir (GCN with --eval full: its test accuracy comes
#    from full-graph inference and must be a real accuracy);
# 2. --infer --out (2 trainers, then 3: a part shared by two ranks): the per-part logits and last hidden layer equal a direct full-graph numpy
#    computation with the same weights within 1e-5 (infer_reference.py, which also checks that
#    every node is there once and that it would notice a 1e-3 change of one weight);
# 3. bad input: no checkpoint, a checkpoint of another shape, an --out that cannot be written:
#    each refused with a non-zero exit naming what is wrong.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer
PY=${GRAPHSHARD_PYTHON:-python3}
"$PY" -c "import numpy" || fail "$PY has no numpy (deploy/install-deps.sh installs python3-numpy)"
partition_cora "$WORK/cora2"

launch() {  # launch NAME TRAINERS [trainer flags...]: output to WORK/NAME.*, sets STATUS
  local name=$1 trainers=$2
  shift 2
  STATUS=0
  # shellcheck disable=SC2086  # LAUNCH_EXTRA: more launcher flags, word-split
  timeout 300 "$LAUNCH" --partition "$WORK/cora2" --servers 2 --trainers "$trainers" \
    --bin-dir "$BIN" --registry "$WORK/registry_$name" --server-wait-s 60 ${LAUNCH_EXTRA:-} \
    -- "$@" \
    >"$WORK/$name.stdout" 2>"$WORK/$name.stderr" || STATUS=$?
}
expect_refused() {  # expect_refused NAME PATTERN: the run failed and its errors name PATTERN
  ((STATUS != 0)) || { show "$WORK/$1.stderr"; fail "$1: accepted (exit 0)"; }
  grep -q -- "$2" "$WORK/$1.stderr" || { show "$WORK/$1.stderr"; fail "$1: no '$2' in the errors"; }
  note "ok: $1 refused (exit $STATUS): $(grep -m1 -- "$2" "$WORK/$1.stderr" | cut -c1-200)"
}

SAGE=(--model sage --hidden 16 --fanouts "5,5" --batch-size 64 --seed 3)
GCN=(--model gcn --hidden 16 --fanouts "5,5" --batch-size 64 --seed 3 --normalize-features)

launch sage_train 2 "${SAGE[@]}" --epochs 3 --checkpoint-dir "$WORK/ck_sage"
((STATUS == 0)) || { show "$WORK/sage_train.stderr"; fail "sage training exited $STATUS"; }
launch gcn_train 2 "${GCN[@]}" --epochs 3 --eval full --checkpoint-dir "$WORK/ck_gcn"
((STATUS == 0)) || { show "$WORK/gcn_train.stderr"; fail "gcn training exited $STATUS"; }

for model in sage gcn; do
  if [[ $model == sage ]]; then flags=("${SAGE[@]}"); else flags=("${GCN[@]}"); fi
  launch "${model}_infer" 2 "${flags[@]}" --infer --checkpoint-dir "$WORK/ck_$model" \
    --out "$WORK/out_$model"
  ((STATUS == 0)) || { show "$WORK/${model}_infer.stderr"; fail "$model --infer exited $STATUS"; }
  show "$WORK/${model}_infer.stdout"
  ref=(--tol 1e-5)
  [[ $model == gcn ]] && ref+=(--normalize)
  "$PY" "$SRC/tests/e2e/infer_reference.py" "$WORK/cora2" "$WORK/out_$model" "$model" "${ref[@]}" ||
    fail "$model: inference differs from the full-graph reference"
done
# 3 trainers on 2 parts (default assignment part): part 0 is shared by two ranks (chunks), part
# 1 read by one.
launch sage_infer3 3 "${SAGE[@]}" --infer --checkpoint-dir "$WORK/ck_sage" --out "$WORK/out3"
((STATUS == 0)) || { show "$WORK/sage_infer3.stderr"; fail "3-trainer --infer exited $STATUS"; }
[[ -s $WORK/out3/part_0/chunk_1/logits.npy && -s $WORK/out3/part_1/logits.npy ]] ||
  fail "3 trainers: expected part_0/chunk_{0,1}/ and part_1/"
"$PY" "$SRC/tests/e2e/infer_reference.py" "$WORK/cora2" "$WORK/out3" sage --tol 1e-5 ||
  fail "3 trainers: inference differs from the full-graph reference"
# The same with --assignment spread: every rank infers a third of each part.
launch sage_infer3s 3 "${SAGE[@]}" --infer --checkpoint-dir "$WORK/ck_sage" --out "$WORK/out3s" \
  --assignment spread
((STATUS == 0)) || { show "$WORK/sage_infer3s.stderr"; fail "3-trainer --infer (spread) exited $STATUS"; }
[[ -s $WORK/out3s/part_0/chunk_2/logits.npy && -s $WORK/out3s/part_1/chunk_2/logits.npy ]] ||
  fail "3 trainers (spread): expected part_0/chunk_{0,1,2}/ and part_1/chunk_{0,1,2}/"
"$PY" "$SRC/tests/e2e/infer_reference.py" "$WORK/cora2" "$WORK/out3s" sage --tol 1e-5 ||
  fail "3 trainers (spread): inference differs from the full-graph reference"
# Servers whose budget per request (8 MiB) cannot hold 64 Cora nodes' whole in-neighbourhoods
# (1433 features): the blocks are halved until they fit, and the outputs stay the same.
LAUNCH_EXTRA="--server-arg=--max-request-mib=8" launch sage_infer_budget 2 "${SAGE[@]}" \
  --infer --checkpoint-dir "$WORK/ck_sage" --out "$WORK/out_budget"
((STATUS == 0)) || { show "$WORK/sage_infer_budget.stderr"; fail "--infer under a small budget exited $STATUS"; }
grep -q "inference pass 1: blocks of [0-9]* nodes (not 64)" "$WORK/sage_infer_budget.stderr" ||
  { show "$WORK/sage_infer_budget.stderr"; fail "small budget: the blocks were not reduced (or not said)"; }
"$PY" "$SRC/tests/e2e/infer_reference.py" "$WORK/cora2" "$WORK/out_budget" sage --tol 1e-5 ||
  fail "small budget: inference differs from the full-graph reference"
# --eval full after the last epoch saw the weights of the final checkpoint: its accuracies are
# those --infer reports for that checkpoint.
"$PY" - "$(tail -n 1 "$WORK/gcn_train.stdout")" "$(tail -n 1 "$WORK/gcn_infer.stdout")" <<'PY' ||
import json, sys
train, infer = (json.loads(a) for a in sys.argv[1:3])
for key in ("val_acc", "test_acc"):
    assert abs(train[key] - infer[key]) < 1e-6, f"--eval full {key} {train[key]} != --infer's {infer[key]}"
assert 0 < train["test_acc"] <= 1
print("gcn --eval full test_acc", train["test_acc"], "= --infer's", file=sys.stderr)
PY
  fail "--eval full disagrees with --infer on the same weights"

# Bad input, each refused naming what is wrong.
mkdir -p "$WORK/empty"
launch no_checkpoint 1 "${SAGE[@]}" --infer --checkpoint-dir "$WORK/empty" --out "$WORK/o1"
expect_refused no_checkpoint "no checkpoint at $WORK/empty/checkpoint.pt"
launch other_hidden 1 --model sage --hidden 32 --fanouts "5,5" --infer \
  --checkpoint-dir "$WORK/ck_sage" --out "$WORK/o2"
expect_refused other_hidden "hidden 16 there, 32 here"
launch other_model 1 --model gcn --hidden 16 --fanouts "5,5" --infer \
  --checkpoint-dir "$WORK/ck_sage" --out "$WORK/o3"
expect_refused other_model "model sage there, gcn here"
touch "$WORK/a_file"
launch bad_out 1 "${SAGE[@]}" --infer --checkpoint-dir "$WORK/ck_sage" --out "$WORK/a_file/out"
expect_refused bad_out "\-\-out $WORK/a_file/out"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: full-graph inference equals the reference (sage, gcn); bad input refused"
