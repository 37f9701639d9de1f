#!/usr/bin/env bash
# --static-shapes on Cora, 2 servers + 2 trainers (processes, Gloo, CPU), through the launcher:
# the training batches padded to per-hop capacities (trainer/static_shapes.h; on a GPU the step
# is then a CUDA graph, tests/bench/static_shapes_bench.sh) compute the same function as the
# unpadded ones: without dropout, every epoch's loss and accuracy and the final accuracies
# equal the unpadded run's (the weights may differ in the last bits: matmuls over more rows).
# `--static-shapes on` is refused, naming why, for a link task (at parsing) and for a
# heterogeneous graph (IMDB, at start-up).
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer
partition_cora "$WORK/cora2"

FLAGS=(--epochs 3 --eval-every 3 --hidden 16 --fanouts "5,5" --batch-size 16 --seed 3
  --dropout 0)
launch() { launch_named "$1" "$WORK/$2" "${FLAGS[@]}" "${@:3}"; }  # NAME PARTITION [flags...]
epochs() { grep "^epoch" "$WORK/$1.stdout" | sed 's/ seeds_per_s.*//'; }

launch plain cora2 --static-shapes off
((STATUS == 0)) || { show "$WORK/plain.stderr"; fail "unpadded run exited $STATUS"; }
launch padded cora2 --static-shapes on
((STATUS == 0)) || { show "$WORK/padded.stderr"; fail "padded run exited $STATUS"; }
for rank in 0 1; do
  grep -q "rank $rank: static shapes: training batches padded" "$WORK/padded.stderr" ||
    { show "$WORK/padded.stderr"; fail "rank $rank does not say it pads"; }
done
grep -q "static shapes" "$WORK/plain.stderr" && fail "the unpadded run says it pads"
[[ $(epochs plain | wc -l) == 3 ]] || { show "$WORK/plain.stdout"; fail "not 3 epoch lines"; }
[[ $(epochs padded) == "$(epochs plain)" ]] ||
  { diff <(epochs plain) <(epochs padded) >&2; fail "padded epochs differ from unpadded ones"; }
python3 - "$WORK/plain.stdout" "$WORK/padded.stdout" <<'PY' || fail "padded summary"
import json, sys
a, b = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:])
assert a["test_acc"] == b["test_acc"] and a["val_acc"] == b["val_acc"], (a, b)
assert abs(a["loss"] - b["loss"]) <= 1e-6 * abs(a["loss"]), (a["loss"], b["loss"])
print("loss", a["loss"], b["loss"], "test_acc", a["test_acc"], file=sys.stderr)
PY

# Refused where it does not apply.
STATUS=0
"$BIN/graphshard-trainer" --servers 127.0.0.1:1 --task link --static-shapes on \
  >/dev/null 2>"$WORK/link.err" || STATUS=$?
((STATUS != 0)) || fail "--static-shapes on --task link was accepted"
grep -q -- "--static-shapes on: it pads node-task batches only" "$WORK/link.err" ||
  { show "$WORK/link.err"; fail "the link refusal does not say why"; }
timeout 120 "$BIN/graphshard-partition" partition --input "$SRC/tests/data/imdb" --parts 2 \
  --method random --seed 1 --out "$WORK/imdb2" >"$WORK/partition.log" 2>&1 ||
  { show "$WORK/partition.log"; fail "graphshard-partition partition imdb"; }
launch hetero imdb2 --static-shapes on
((STATUS != 0)) || fail "--static-shapes on was accepted on a heterogeneous graph"
grep -q -- "--static-shapes on: it pads homogeneous graphs only" "$WORK/hetero.stderr" ||
  { show "$WORK/hetero.stderr"; fail "the heterogeneous refusal does not say why"; }
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: --static-shapes"
