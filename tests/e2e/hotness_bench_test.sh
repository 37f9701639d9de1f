#!/usr/bin/env bash
# tests/bench/hotness_bench on Cora (milliseconds): the device tier's hit rate per ranking of
# rows. Checks what the docs rest on (docs/DESIGN.md, "Why pre-sampling, not in-degree"): every
# rate a share, rising with the tier's size, never above the bound (the rows ranked by the
# evaluated epochs' own visits); on Cora (undirected) pre-sampling above in-degree at 25%; on
# Cora as given (directed: batches visit only the training nodes) pre-sampling all, in-degree
# none. The share of rows outside the tier that the batches just before also gather is a share
# that does not fall as the window grows. Bad flags exit 2, a missing partition 1 naming it.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition hotness_bench

partition_cora "$WORK/cora_u"
timeout 120 "$BIN/graphshard-partition" partition --input "$CORA" --parts 2 --method random \
  --seed 1 --out "$WORK/cora_d" >"$WORK/partition_d.log" 2>&1 ||
  { show "$WORK/partition_d.log"; fail "graphshard-partition partition (directed)"; }
for g in cora_u cora_d; do
  timeout 120 "$BIN/hotness_bench" --partition "$WORK/$g" --threads 2 --eval-epochs 4 \
    --fractions 0.05,0.1,0.25 >"$WORK/$g.jsonl" 2>"$WORK/$g.err" ||
    { show "$WORK/$g.err"; fail "hotness_bench on $g (status $?)"; }
done

python3 - "$WORK/cora_u.jsonl" "$WORK/cora_d.jsonl" <<'PY' || fail "hotness_bench results (above)"
import json, sys

def rates(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        name = r["name"]
        if name.startswith("hit_rate_"):
            pct, ranking = name[len("hit_rate_"):].split("pct_", 1)
            out.setdefault(ranking, {})[float(pct)] = r["value"]
    return out

und, directed = rates(sys.argv[1]), rates(sys.argv[2])
for got in (und, directed):
    assert set(got) == {"presample", "presample_degree", "presample2", "presample_plus_degree",
                        "presample_plus_in_degree", "in_degree", "out_degree",
                        "oracle"}, sorted(got)
    for ranking, by_pct in got.items():
        assert sorted(by_pct) == [5.0, 10.0, 25.0], (ranking, by_pct)
        values = [by_pct[p] for p in sorted(by_pct)]
        assert all(0 <= v <= 1 for v in values), (ranking, values)
        assert values == sorted(values), ("not rising with the tier", ranking, values)
        for p, v in by_pct.items():
            assert v <= got["oracle"][p] + 1e-9, ("above the bound", ranking, p, v)
print("undirected:", {k: v[25.0] for k, v in und.items()})
assert und["presample"][25.0] > und["in_degree"][25.0] + 0.02, und
assert 0.05 < und["presample"][10.0] < 0.5, und
reuse_of = {}
for path in sys.argv[1:]:
    reuse = reuse_of.setdefault(path, {})
    for line in open(path):
        r = json.loads(line)
        if r["name"].startswith("reuse_"):
            pct, window = r["name"][len("reuse_"):].split("pct_within_")
            reuse.setdefault(float(pct), {})[int(window)] = r["value"]
        if r["name"] == "rows_per_batch":
            assert r["value"] > 0, r
    assert sorted(reuse) == [5.0, 10.0, 25.0], reuse
    for pct, by_window in reuse.items():
        assert sorted(by_window) == [1, 2, 4], (pct, by_window)
        values = [by_window[w] for w in sorted(by_window)]
        assert all(0 <= v <= 1 for v in values), (pct, values)
        assert values == sorted(values), ("falls as the window grows", pct, values)
    print("reuse", path, reuse)
# Undirected Cora: 2,708 nodes, batches of hundreds of rows: rows repeat within 4 batches.
assert reuse_of[sys.argv[1]][10.0][4] > 0.05, reuse_of[sys.argv[1]]
print("directed:", {k: v[10.0] for k, v in directed.items()})
assert directed["presample"][10.0] > 0.99 and directed["in_degree"][10.0] < 0.01, directed
PY

status=0
timeout 60 "$BIN/hotness_bench" --partition "$WORK/cora_u" --fractions 0 >/dev/null \
  2>"$WORK/bad.err" || status=$?
if ((status != 2)) || ! grep -q "usage: hotness_bench" "$WORK/bad.err"; then
  show "$WORK/bad.err"
  fail "--fractions 0: status $status, want 2 and the usage"
fi
status=0
timeout 60 "$BIN/hotness_bench" --partition "$WORK/cora_u" --reuse-windows 0 >/dev/null \
  2>"$WORK/bad_window.err" || status=$?
if ((status != 2)) || ! grep -q "usage: hotness_bench" "$WORK/bad_window.err"; then
  show "$WORK/bad_window.err"
  fail "--reuse-windows 0: status $status, want 2 and the usage"
fi
status=0
timeout 60 "$BIN/hotness_bench" --partition "$WORK/missing" >/dev/null 2>"$WORK/missing.err" ||
  status=$?
if ((status != 1)) || ! grep -q "$WORK/missing" "$WORK/missing.err"; then
  show "$WORK/missing.err"
  fail "a missing partition: status $status, want 1 naming it"
fi
echo "PASS"
