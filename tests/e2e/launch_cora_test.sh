#!/usr/bin/env bash
# End to end on Cora: partition (2 parts, undirected), then deploy/graphshard-launch with 2
# servers and 2 GraphSAGE trainers. The launcher's last stdout line must be the bare JSON
# summary with test_acc >= 0.75, and both ranks must end with the same weights fingerprint
# (gradients all-reduced: the replicas never diverge). Then the same with --assignment spread:
# each rank reads both servers (half of each part's seeds), with the same guarantees. Then the
# first run again with --feature-store device: every trainer loads all feature rows from the
# servers once and the batches come as ids and labels; the weights must be the first run's bit
# for bit (same batches, same rows, gathered on the trainer instead of the server). The node
# task's tuning is the trainer's defaults (trainer/README.md, "Per-task defaults"): no flag here
# sets hidden size, fanouts, batch size, learning rate, weight decay or dropout.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer

partition_cora "$WORK/cora2"
note "launching 2 servers + 2 trainers"
launch_2x2 540 "$WORK/cora2" --model sage --epochs 40 --eval-every 10 --seed 1

expect_summary "$WORK/stdout" 0.75 2
expect_same_weights "$WORK/stderr"
# --feature-store auto (the default) keeps the rows with the batches off a GPU, and says so.
for r in 0 1; do
  grep -q "^\[trainer $r\] rank $r: feature rows come with each batch (--feature-store auto: not a GPU)" "$WORK/stderr" ||
    fail "auto store: rank $r does not say that its rows come with the batches on the CPU"
done
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: fingerprint $FINGERPRINT"
server_fingerprint=$FINGERPRINT

note "launching 2 servers + 2 trainers, --assignment spread"
launch_2x2 540 "$WORK/cora2" --model sage --epochs 40 --eval-every 10 --seed 1 \
  --assignment spread
expect_summary "$WORK/stdout" 0.75 2
expect_same_weights "$WORK/stderr"
for r in 0 1; do
  for p in 0 1; do
    grep -q "^\[trainer $r\] rank $r reads part $p (chunk $r of 2)" "$WORK/stderr" ||
      fail "spread: rank $r does not read chunk $r of 2 of part $p"
  done
done
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok (spread): fingerprint $FINGERPRINT"

note "launching 2 servers + 2 trainers, --feature-store device"
launch_2x2 540 "$WORK/cora2" --model sage --epochs 40 --eval-every 10 --seed 1 \
  --feature-store device
expect_summary "$WORK/stdout" 0.75 2
expect_same_weights "$WORK/stderr"
for r in 0 1; do
  grep -q "^\[trainer $r\] rank $r feature store (14.8 MiB of rows, .*): device cpu 14.8 MiB, 100.0% of rows" "$WORK/stderr" ||
    fail "device store: rank $r did not load Cora's 2708 x 1433 float32 rows"
done
[[ $FINGERPRINT == "$server_fingerprint" ]] ||
  fail "device store: weights $FINGERPRINT differ from the server-fed run's $server_fingerprint"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok (device store): same fingerprint $FINGERPRINT"
