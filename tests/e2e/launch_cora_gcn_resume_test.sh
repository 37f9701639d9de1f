#!/usr/bin/env bash
# End to end on Cora with GCN, 2 servers and 2 trainers (processes, Gloo), through the launcher:
# 1. an uninterrupted run reaches test_acc >= 0.78;
# 2. the same run with --checkpoint-every 4 --stop-after-steps 10 stops (exit 3), and a
#    --resume run from its checkpoint folder ends with the same weights fingerprint, bit for bit.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer
partition_cora "$WORK/cora2"

FLAGS=(--model gcn --epochs 40 --eval-every 40 --hidden 32 --fanouts "10,10" --batch-size 32
       --weight-decay 5e-4 --normalize-features --seed 1)
launch() { launch_named "$1" "$WORK/cora2" "${FLAGS[@]}" "${@:2}"; }  # NAME [trainer flags...]
fingerprint() { rank_fingerprint "$@"; }  # NAME RANK

launch full
((STATUS == 0)) || { show "$WORK/full.stderr"; fail "uninterrupted run exited $STATUS"; }
show "$WORK/full.stdout"
last=$(tail -n 1 "$WORK/full.stdout")
python3 -c "
import json, sys
s = json.loads(sys.argv[1])
assert s['test_acc'] >= 0.78, f\"GCN test_acc {s['test_acc']} < 0.78\"
print('GCN test_acc', s['test_acc'], file=sys.stderr)" "$last" || fail "GCN accuracy"
full_fp=$(fingerprint full 0)
[[ -n $full_fp && $full_fp == "$(fingerprint full 1)" ]] || fail "ranks differ in the full run"

launch stopped --checkpoint-dir "$WORK/ckpt" --checkpoint-every 4 --stop-after-steps 10
((STATUS == 3)) || { show "$WORK/stopped.stderr"; fail "stopped run exited $STATUS, not 3"; }
[[ -s $WORK/ckpt/checkpoint.pt ]] || fail "no checkpoint written"
launch resumed --checkpoint-dir "$WORK/ckpt" --checkpoint-every 4 --resume
((STATUS == 0)) || { show "$WORK/resumed.stderr"; fail "resumed run exited $STATUS"; }
grep -q "resuming from .* at epoch" "$WORK/resumed.stderr" || fail "the run did not resume"
resumed_fp=$(fingerprint resumed 0)
[[ $resumed_fp == "$full_fp" ]] ||
  fail "resumed weights $resumed_fp differ from the uninterrupted run's $full_fp"
[[ $resumed_fp == "$(fingerprint resumed 1)" ]] || fail "ranks differ in the resumed run"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: GCN and resume, fingerprint $full_fp"
