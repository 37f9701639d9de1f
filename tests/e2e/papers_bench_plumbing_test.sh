#!/usr/bin/env bash
# tests/bench/papers_bench.sh as a user runs it, on the CPU at a tiny scale: generate the
# papers-shaped graph, cut it with random and stream, inspect both, train one CPU epoch through
# the launcher on the random one, and print every JSON line. Checks that each line is there with
# figures (no error line), and that stream's cut is below random's: the script's plumbing, not
# its speed. With GRAPHSHARD_NO_TRAINER=1 (builds without the trainer) it stops before training.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
CONFIGS="1gpu_2srv"
if [[ ${GRAPHSHARD_NO_TRAINER:-0} == 1 ]]; then
  need_bin graphshard-partition
  CONFIGS=""
else
  need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer
fi

OUTDIR=$WORK/out
DEVICE=cpu SCALE=0.0002 PARTS=2 METHODS="random stream" EPOCHS=1 CONFIGS="$CONFIGS" \
  BIN_DIR=$BIN WORK=$WORK/bench OUT=$OUTDIR TOTAL_BUDGET=400 \
  timeout 420 bash "$SRC/tests/bench/papers_bench.sh" >"$WORK/stdout" 2>"$WORK/stderr" ||
  { tail -20 "$WORK/stderr" >&2; fail "papers_bench.sh exited $?"; }
python3 - "$OUTDIR/results.jsonl" "$CONFIGS" <<'PY' || fail "papers_bench.sh results (above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {l["name"]: l for l in lines}
errors = [l for l in lines if "error" in l]
assert not errors, errors
gen = by["papers_generate"]
assert gen["exit"] == 0 and gen["shape"]["nodes"] == 22212, gen
assert gen["shape"]["directed_edges"] == 2 * gen["shape"]["citations"], gen
random, stream = by["papers_partition_random_2"], by["papers_partition_stream_2"]
assert random["remote_fraction"] > 0.4, random
assert stream["remote_fraction"] < random["remote_fraction"] - 0.1, (stream, random)
assert stream["node_balance"] <= 1.06 and stream["peak_rss_mib"] > 0, stream
# Where the time went, read from the tool's progress lines: every pass, both parts' files.
assert stream["phases"]["stream_passes"] >= 2, stream
assert all(k in stream["phases"] for k in ("stream_counts_s", "stream_walk_s", "nodes_s", "edges_s")), stream
assert "stream_passes" not in random["phases"] and "edges_s" in random["phases"], random
epoch = "not trained (no trainer in this build)"
if sys.argv[2]:
    train = by["gpu_train_1gpu_2srv"]
    assert train["value"] > 0 and train["steps"] >= 1, train
    epoch = f"epoch {train['value']} s"
else:
    assert not any(n.startswith("gpu_train") for n in by), sorted(by)
print("papers_bench plumbing ok:", gen["shape"]["nodes"], "nodes; remote", random["remote_fraction"],
      "->", stream["remote_fraction"], ";", epoch)
PY
