#!/usr/bin/env bash
# Link prediction end to end on Cora: partition (2 parts, undirected, 85/5/10 edge
# split seeded), then deploy/graphshard-launch with 2 servers and 2 trainers, --task link
# (GraphSAGE encoder, dot-product decoder, BCE). The summary must report test AUC >= 0.90
# (GAE reports about 0.91 on Cora), MRR and Hits@10 in [0, 1], with the link task's defaults
# (trainer/README.md, "Per-task defaults": no tuning flag here); both ranks end with the same
# weights. The same on IMDB's director -> movie edges (heterogeneous), test AUC >= 0.80 after 3
# epochs, and again with --feature-store device (the same weights). Then the refusals: --task link on a partition without edge splits, and an edge type
# the graph lacks, each exit non-zero naming what is missing.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer graphshard-partition

note "partitioning Cora with a seeded 85/5/10 edge split"
timeout 120 "$BIN/graphshard-partition" partition --input "$CORA" --parts 2 --method random \
  --undirected --edge-split 0.85,0.05,0.10 --seed 1 --out "$WORK/cora_link" \
  >"$WORK/partition.log" 2>&1 || { show "$WORK/partition.log"; fail "partition --edge-split"; }

note "launching 2 servers + 2 link-prediction trainers"
launch_2x2 800 "$WORK/cora_link" --task link --epochs 40 --eval-every 40 --seed 1 \
  --metrics-file "$WORK/metrics.jsonl"

expect_summary "$WORK/stdout" 0 2
python3 - "$(tail -n 1 "$WORK/stdout")" "$WORK/metrics.jsonl" <<'PY' || fail "link summary check failed"
import json, sys
s = json.loads(sys.argv[1])
for key in ("test_auc", "val_auc", "test_mrr", "val_mrr", "test_hits@10", "val_hits@10"):
    assert key in s, f"missing {key!r} in {s}"
    assert 0.0 <= s[key] <= 1.0, (key, s)
print(f"test_auc {s['test_auc']:.4f} val_auc {s['val_auc']:.4f} test_mrr {s['test_mrr']:.4f} "
      f"test_hits@10 {s['test_hits@10']:.4f} seeds_per_s {s['seeds_per_s']:.1f}", file=sys.stderr)
assert s["test_auc"] >= 0.90, f"test_auc {s['test_auc']} < 0.90"
epochs = [json.loads(l) for l in open(sys.argv[2]) if json.loads(l)["event"] == "epoch"]
assert "test_auc" in epochs[-1], epochs[-1]
PY
expect_same_weights "$WORK/stderr"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"

# Heterogeneous: IMDB's director -> movie edges, the inverse relation named as the reverse
# (its held-out edges leave the graph too), heterogeneous GraphSAGE embedding both types.
note "heterogeneous: IMDB director__director_to_movie__movie"
timeout 120 "$BIN/graphshard-partition" partition --input "$SRC/tests/data/imdb" --parts 2 \
  --method random --edge-split 0.8,0.1,0.1 --target-edge-type director__director_to_movie__movie \
  --reverse-edge-type movie__movie_to_director__director --seed 1 --out "$WORK/imdb_link" \
  >"$WORK/partition_imdb.log" 2>&1 || { show "$WORK/partition_imdb.log"; fail "partition imdb"; }
launch_2x2 500 "$WORK/imdb_link" --task link --target-edge-type director__director_to_movie__movie \
  --epochs 3 --eval-every 3 --hidden 64 --seed 1
python3 - "$(tail -n 1 "$WORK/stdout")" <<'PY' || fail "heterogeneous link summary check failed"
import json, sys
s = json.loads(sys.argv[1])
print(f"imdb test_auc {s['test_auc']:.4f} test_mrr {s['test_mrr']:.4f}", file=sys.stderr)
assert s["test_auc"] >= 0.80, f"test_auc {s['test_auc']} < 0.80"
PY
expect_same_weights "$WORK/stderr"
hetero_link_fingerprint=$FINGERPRINT

# The same with --feature-store device (link batches as ids, both types' rows on the trainer):
# the weights bit for bit.
note "heterogeneous link, --feature-store device"
launch_2x2 500 "$WORK/imdb_link" --task link --target-edge-type director__director_to_movie__movie \
  --epochs 3 --eval-every 3 --hidden 64 --seed 1 \
  --feature-store device
expect_same_weights "$WORK/stderr"
[[ $FINGERPRINT == "$hetero_link_fingerprint" ]] ||
  fail "device store: link weights $FINGERPRINT differ from $hetero_link_fingerprint"

# refused RUN_NAME EXPECTED_TEXT PARTITION TRAINER_ARGS...: the launch fails (non-zero) and the
# trainers' stderr names what is missing.
refused() {
  local name=$1 text=$2 partition=$3 status=0
  shift 3
  timeout 240 "$LAUNCH" --partition "$partition" --servers 2 --trainers 1 --bin-dir "$BIN" \
    --registry "$WORK/registry_$name" --server-wait-s 60 -- "$@" \
    >"$WORK/$name.out" 2>"$WORK/$name.err" || status=$?
  ((status != 0)) || { show "$WORK/$name.err"; fail "$name: the launch exited 0"; }
  grep -q -- "$text" "$WORK/$name.err" || { show "$WORK/$name.err"; fail "$name: no '$text'"; }
  note "ok: $name refused (status $status): $(grep -m1 -- "$text" "$WORK/$name.err")"
}

partition_cora "$WORK/cora_plain"
refused no_edge_split "partition it with --edge-split" "$WORK/cora_plain" --task link --epochs 1
refused unknown_edge_type "no such edge type" "$WORK/cora_link" --task link --epochs 1 \
  --target-edge-type paper__cites__paper
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: fingerprint $FINGERPRINT"
