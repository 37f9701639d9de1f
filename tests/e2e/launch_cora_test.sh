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
status=0
timeout 540 "$LAUNCH" --partition "$WORK/cora2" --servers 2 --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/registry" --server-wait-s 60 -- \
  --model sage --epochs 40 --eval-every 10 --weight-decay 5e-4 --seed 1 \
  >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
show "$WORK/stdout"
show "$WORK/stderr"
((status == 0)) || fail "graphshard-launch exited with status $status"

last=$(tail -n 1 "$WORK/stdout")
[[ $last == \{* ]] || fail "last stdout line is not a bare JSON object: '$last'"
python3 - "$last" <<'PY' || fail "JSON summary check failed"
import json, sys
summary = json.loads(sys.argv[1])
for key in ("test_acc", "val_acc", "epochs", "seeds_per_s", "world_size"):
    assert key in summary, f"missing {key!r} in {summary}"
assert summary["world_size"] == 2, summary
assert 0.0 <= summary["val_acc"] <= 1.0, summary
assert summary["test_acc"] >= 0.75, f"test_acc {summary['test_acc']} < 0.75"
print(f"test_acc {summary['test_acc']} val_acc {summary['val_acc']}", file=sys.stderr)
PY
(($(grep -c '^{' "$WORK/stdout") == 1)) || fail "expected exactly one JSON line on stdout"

# "[trainer r] rank r weights_fingerprint HEX" on the launcher's stderr.
declare -A fp=()
while read -r rank hex; do fp[$rank]=$hex; done < <(
  sed -n 's/^\[trainer [0-9]*\] rank \([0-9]*\) weights_fingerprint \([0-9a-fA-F]*\)$/\1 \2/p' \
    "$WORK/stderr")
[[ -n ${fp[0]:-} && -n ${fp[1]:-} ]] || fail "missing weights_fingerprint line for rank 0 or 1"
[[ ${fp[0]} == "${fp[1]}" ]] || fail "weights differ: rank 0 ${fp[0]}, rank 1 ${fp[1]}"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: fingerprint ${fp[0]}"
