#!/usr/bin/env bash
# Graph classification end to end: `generate --kind graphs` writes a TU dataset,
# `partition` shards its whole graphs over 2 parts, deploy/graphshard-launch runs 2 servers and
# 2 GIN trainers (--task graph). The classes are balanced, so chance is 0.5; the test set has
# 60 graphs, where a classifier at chance exceeds 0.65 with probability < 1%: the test asks for
# test_acc >= 0.75 (the run reaches ~0.9) with the graph task's defaults (trainer/README.md,
# "Per-task defaults"). Both ranks must end with identical weights.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer

timeout 120 "$BIN/graphshard-partition" generate --kind graphs --seed 4 --num-graphs 600 \
  --out "$WORK/tu" >"$WORK/gen.out" 2>&1 || { show "$WORK/gen.out"; fail "generate failed"; }
timeout 120 "$BIN/graphshard-partition" partition --input "$WORK/tu" --parts 2 --seed 1 \
  --out "$WORK/tu2" >"$WORK/part.out" 2>&1 || { show "$WORK/part.out"; fail "partition failed"; }
grep -q '(tu, 2 node types, 2 edge types)' "$WORK/part.out" || { show "$WORK/part.out"; fail "not read as TU"; }
note "launching 2 servers + 2 GIN trainers"
launch_2x2 540 "$WORK/tu2" \
  --task graph --epochs 25 --eval-every 5 --seed 2

expect_summary "$WORK/stdout" 0.75 2
expect_same_weights "$WORK/stderr"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"

# A node task on this partition is refused with a clear error, not trained on graph labels.
status=0
timeout 120 "$LAUNCH" --partition "$WORK/tu2" --servers 2 --trainers 1 --bin-dir "$BIN" \
  --registry "$WORK/registry2" --server-wait-s 60 -- --epochs 1 \
  >"$WORK/stdout2" 2>"$WORK/stderr2" || status=$?
((status != 0)) || { show "$WORK/stderr2"; fail "a node task on a TU partition exited 0"; }
grep -q 'graph-classification (TU) dataset: pass --task graph' "$WORK/stderr2" ||
  { show "$WORK/stderr2"; fail "no clear error for --task node on a TU partition"; }
note "ok"
