#!/usr/bin/env bash
# End to end on Cora: partition (2 parts, undirected), then deploy/graphshard-launch with 2
# servers and 2 GraphSAGE trainers. The launcher's last stdout line must be the bare JSON
# summary with test_acc >= 0.75, and both ranks must end with the same weights fingerprint
# (gradients all-reduced: the replicas never diverge).
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer

partition_cora "$WORK/cora2"
note "launching 2 servers + 2 trainers"
launch_2x2 540 "$WORK/cora2" --model sage --epochs 40 --eval-every 10 --weight-decay 5e-4 --seed 1

expect_summary "$WORK/stdout" 0.75 2
expect_same_weights "$WORK/stderr"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: fingerprint $FINGERPRINT"
