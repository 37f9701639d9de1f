#!/usr/bin/env bash
# Temporal sampling end to end (and its bad input): `generate --kind ratings`
# (users rating items over time), partitioned in 2, then deploy/graphshard-launch with 2 servers
# and 2 trainers and --temporal (item seeds at their release time; heterogeneous GraphSAGE): the
# run must finish with a bare JSON summary above chance. And --temporal on Cora (no times) must
# be refused before training: non-zero exit, a message naming the missing edge_time.npy.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer

note "generating the ratings graph"
timeout 120 "$BIN/graphshard-partition" generate --kind ratings --seed 3 --num-nodes 1200 \
  --num-items 500 --avg-degree 12 --num-features 16 --num-classes 6 --out "$WORK/ratings" \
  >"$WORK/generate.log" 2>&1 || { show "$WORK/generate.log"; fail "generate --kind ratings"; }
for f in edge_time__user__rates__item.npy edge_time__item__rev_rates__user.npy \
  node_time__item.npy node_time__user.npy; do
  [[ -s $WORK/ratings/$f ]] || fail "generate --kind ratings wrote no $f"
done
timeout 120 "$BIN/graphshard-partition" partition --input "$WORK/ratings" --parts 2 \
  --method random --seed 1 --out "$WORK/parts" >"$WORK/partition.log" 2>&1 ||
  { show "$WORK/partition.log"; fail "graphshard-partition partition"; }
for p in 0 1; do
  for f in edges/user__rates__item/time.npy edges/item__rev_rates__user/time.npy \
    nodes/item/time.npy nodes/user/time.npy; do
    [[ -s $WORK/parts/part_$p/$f ]] || fail "partition wrote no part_$p/$f"
  done
done

note "2 servers + 2 trainers, --temporal"
launch_2x2 300 "$WORK/parts" --temporal --model sage --epochs 4 --eval-every 4 --hidden 32 \
  --fanouts 8,4 --batch-size 64 --lr 0.01 --seed 1
# 6 item categories: chance is 1/6.
expect_summary "$WORK/stdout" 0.40 2
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"

note "--temporal on Cora (no times) is refused"
partition_cora "$WORK/cora2"
status=0
timeout 120 "$LAUNCH" --partition "$WORK/cora2" --servers 2 --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/registry_cora" --server-wait-s 60 -- --temporal --epochs 1 \
  >"$WORK/cora.stdout" 2>"$WORK/cora.stderr" || status=$?
show "$WORK/cora.stderr"
((status != 0)) || fail "--temporal on a graph without times exited 0"
((status != 124)) || fail "--temporal on a graph without times hung"
grep -q -- "--temporal: this partition has no times" "$WORK/cora.stderr" ||
  fail "the refusal does not say what is missing"
grep -q "edge_time.npy" "$WORK/cora.stderr" || fail "the refusal does not name edge_time.npy"
! grep -q '^{' "$WORK/cora.stdout" || fail "a refused run printed a summary"
note "ok"
