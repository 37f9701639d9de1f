#!/usr/bin/env bash
# Temporal link prediction end to end: `generate --kind ratings` (users
# rating items over time), partitioned in 2 with a chronological 80/10/10 split of the
# user__rates__item edges (train = the earliest ratings, test = the latest; each supervision
# edge with its time), then deploy/graphshard-launch with 2 servers and 2 trainers,
# --task link --temporal-strict (every endpoint sampled at its rating's time, neighbours
# strictly earlier; heterogeneous GraphSAGE + dot product). The trained model's test Hits@10
# must beat a popularity baseline's: items ranked by their number of training ratings (all
# before the test period), against the same protocol (each test rating against
# --eval-neg-ratio items drawn uniformly, ties half; computed here exactly from the partition's
# files with numpy). Then --temporal --task link on a graph without edge times is refused
# naming the missing file.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer
PY=${GRAPHSHARD_PYTHON:-python3}
"$PY" -c "import numpy" 2>/dev/null || fail "$PY has no numpy (python3-numpy, deploy/install-deps.sh)"
ET=user__rates__item
NEG=${TLINK_EVAL_NEG:-100}

note "generating and partitioning the ratings graph (chronological edge split)"
timeout 120 "$BIN/graphshard-partition" generate --kind ratings --seed 3 --num-nodes 1000 \
  --num-items 400 --avg-degree 14 --num-features 16 --num-classes 8 --out "$WORK/ratings" \
  >"$WORK/generate.log" 2>&1 || { show "$WORK/generate.log"; fail "generate --kind ratings"; }
timeout 120 "$BIN/graphshard-partition" partition --input "$WORK/ratings" --parts 2 \
  --method random --seed 1 --edge-split 0.8,0.1,0.1 --target-edge-type $ET --out "$WORK/parts" \
  >"$WORK/partition.log" 2>&1 || { show "$WORK/partition.log"; fail "partition --edge-split"; }
for p in 0 1; do
  for s in train val test; do
    [[ -s $WORK/parts/part_$p/edge_splits/$ET/${s}_time.npy ]] ||
      fail "partition wrote no part_$p/edge_splits/$ET/${s}_time.npy"
  done
done

note "popularity baseline (training in-degree), Hits@10 against $NEG uniform negatives"
"$PY" - "$WORK/parts" "$ET" "$NEG" 10 >"$WORK/baseline.txt" <<'PY' || fail "baseline failed"
import json, math, sys
import numpy as np
parts, et, neg, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
m = json.load(open(f"{parts}/graphshard.json"))
items = next(t["num_nodes"] for t in m["node_types"] if t["name"] == "item")
def load(split):
    pairs = [np.load(f"{parts}/part_{p}/edge_splits/{et}/{split}.npy") for p in range(m["num_parts"])]
    times = [np.load(f"{parts}/part_{p}/edge_splits/{et}/{split}_time.npy") for p in range(m["num_parts"])]
    return np.concatenate([q[1] for q in pairs]), np.concatenate(times)
train_dst, train_t = load("train")
test_dst, test_t = load("test")
# A chronological split: every training rating is at or before every test rating.
assert train_t.max() <= test_t.min(), (train_t.max(), test_t.min())
degree = np.bincount(train_dst, minlength=items)
# P(rank <= k) for a positive of degree d among `neg` uniform draws: A items above it, T tied
# (rank = 1 + A + T/2, as client/link_task.cc counts ties), multinomial over (above, tied, below).
def hits(d):
    a = (degree > d).mean(); b = (degree == d).mean(); c = 1 - a - b
    total = 0.0
    for above in range(0, k):
        for tied in range(0, neg - above + 1):
            if 1 + above + 0.5 * tied > k: break
            rest = neg - above - tied
            total += (math.comb(neg, above) * math.comb(neg - above, tied)
                      * a**above * b**tied * c**rest)
    return total
cache = {}
h = np.array([cache.setdefault(int(d), hits(int(d))) for d in degree[test_dst]])
print(f"{h.mean():.6f} {len(test_dst)} {len(train_dst)}")
PY
read -r POP NTEST NTRAIN <"$WORK/baseline.txt"
note "popularity Hits@10 $POP over $NTEST test ratings ($NTRAIN training ratings)"

note "2 servers + 2 trainers, --task link --temporal-strict"
launch_2x2 400 "$WORK/parts" --task link --target-edge-type $ET --temporal-strict \
  --temporal-strategy last --eval-neg-ratio "$NEG" --neg-ratio 4 --epochs 6 --eval-every 6 \
  --fanouts 10,5 --hidden 64 --dropout 0 --seed 1
"$PY" - "$(tail -n 1 "$WORK/stdout")" "$POP" <<'PY' || fail "the model does not beat popularity"
import json, sys
s, pop = json.loads(sys.argv[1]), float(sys.argv[2])
model = s["test_hits@10"]
print(f"test_hits@10 model {model:.4f} popularity {pop:.4f}; test_auc {s['test_auc']:.4f} "
      f"test_mrr {s['test_mrr']:.4f}", file=sys.stderr)
assert model > pop, f"model Hits@10 {model} does not beat popularity {pop}"
PY
expect_same_weights "$WORK/stderr"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"

note "--temporal --task link on Cora (edge splits, no times) is refused"
timeout 120 "$BIN/graphshard-partition" partition --input "$CORA" --parts 2 --method random \
  --undirected --edge-split 0.85,0.05,0.10 --seed 1 --out "$WORK/cora_link" \
  >"$WORK/partition_cora.log" 2>&1 || { show "$WORK/partition_cora.log"; fail "partition cora"; }
status=0
timeout 120 "$LAUNCH" --partition "$WORK/cora_link" --servers 2 --trainers 1 --bin-dir "$BIN" \
  --registry "$WORK/registry_cora" --server-wait-s 60 -- --task link --temporal --epochs 1 \
  >"$WORK/cora.stdout" 2>"$WORK/cora.stderr" || status=$?
show "$WORK/cora.stderr"
((status != 0)) || fail "--temporal --task link without edge times exited 0"
((status != 124)) || fail "--temporal --task link without edge times hung"
grep -q "edge_time.npy" "$WORK/cora.stderr" || fail "the refusal does not name edge_time.npy"
! grep -q '^{' "$WORK/cora.stdout" || fail "a refused run printed a summary"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok"
