#!/usr/bin/env bash
# End to end on IMDB (heterogeneous: movie, director, actor): partition (2 parts, random), then
# deploy/graphshard-launch with 2 servers and 2 trainers running the heterogeneous GraphSAGE
# (--model sage on a heterogeneous graph). Batches come through StreamBatches and, on this one
# host, shared memory. The last stdout line must be the bare JSON summary with test_acc >= 0.50
# (3 genres; HAN reports ~0.57 on this split), and both ranks must end with the same weights.
# Then again with --feature-store device (every type's rows on the trainer, batches as ids):
# the same weights, bit for bit.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer

timeout 120 "$BIN/graphshard-partition" partition --input "$SRC/tests/data/imdb" --parts 2 \
  --method random --seed 1 --out "$WORK/imdb2" >"$WORK/partition.log" 2>&1 ||
  { show "$WORK/partition.log"; fail "graphshard-partition partition"; }
note "launching 2 servers + 2 hetero GraphSAGE trainers"
launch_2x2 300 "$WORK/imdb2" \
  --model sage --epochs 6 --eval-every 6 --hidden 32 --fanouts 10,10 --batch-size 64 \
  --lr 0.005 --weight-decay 1e-3 --seed 1 --metrics-file "$WORK/metrics.jsonl"

expect_summary "$WORK/stdout" 0.50 2
python3 - "$(tail -n 1 "$WORK/stdout")" "$WORK/metrics.jsonl" <<'PY' || fail "metrics check failed"
import json, sys
summary = json.loads(sys.argv[1])
assert summary["step_time_s"] > 0, summary
events = [json.loads(l)["event"] for l in open(sys.argv[2])]
assert events == ["run"] + ["epoch"] * 6 + ["summary"], events
PY
expect_same_weights "$WORK/stderr"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: fingerprint $FINGERPRINT"
server_fingerprint=$FINGERPRINT

note "launching 2 servers + 2 hetero GraphSAGE trainers, --feature-store device"
launch_2x2 300 "$WORK/imdb2" \
  --model sage --epochs 6 --eval-every 6 --hidden 32 --fanouts 10,10 --batch-size 64 \
  --lr 0.005 --weight-decay 1e-3 --seed 1 --feature-store device
expect_summary "$WORK/stdout" 0.50 2
expect_same_weights "$WORK/stderr"
grep -q "^\[trainer 0\] rank 0 feature store (.*): device [a-z0-9:]* .* MiB, 100.0% of rows" \
  "$WORK/stderr" ||
  fail "device store: rank 0 did not say it loaded the rows"
[[ $FINGERPRINT == "$server_fingerprint" ]] ||
  fail "device store: weights $FINGERPRINT differ from the server-fed run's $server_fingerprint"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok (device store): same fingerprint $FINGERPRINT"
