#!/usr/bin/env bash
# The queued gradient all-reduce, bit for bit (run on a GPU machine with 2+ GPUs; CI has none):
# Cora, 2 servers + 2 GPU trainers over NCCL, --deterministic, trained with each
# GRAPHSHARD_NCCL_QUEUE_DEPTH of DEPTHS (default "0 1 4": wait for every all-reduce, the
# default, four left running). How far the CPU runs ahead must not change what is computed:
# prints one JSON line with the weights fingerprints, exit 1 where any differs or a run fails.
#
#   source .devdeps/use-deps.sh .devdeps && BIN=build-gpu/bin bash tests/bench/nccl_queue_depth_gpu_check.sh
set -uo pipefail
BIN=${BIN:-build-gpu/bin}
DEPTHS=${DEPTHS:-"0 1 4"}
WORK=$(mktemp -d /tmp/gs-depth-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$BIN/graphshard-partition" partition --input tests/data/cora --parts 2 --method random \
  --undirected --seed 1 --out "$WORK/cora2" >/dev/null || exit 1
fps=()
for d in $DEPTHS; do
  GRAPHSHARD_NCCL_QUEUE_DEPTH=$d timeout 300 deploy/graphshard-launch --partition "$WORK/cora2" \
    --servers 2 --trainers 2 --bin-dir "$BIN" --registry "$WORK/reg-$d" --server-wait-s 60 -- \
    --device cuda --deterministic --seed 1 --model sage --epochs 6 --eval-every 6 \
    >"$WORK/$d.out" 2>"$WORK/$d.err" || { tail -5 "$WORK/$d.err" >&2; }
  fps+=("$(tail -n 1 "$WORK/$d.out")")
done
python3 - "$DEPTHS" "${fps[@]}" <<'PY'
import json, sys
depths, *outs = sys.argv[1:]
fps = {}
for d, o in zip(depths.split(), outs):
    try:
        fps[d] = json.loads(o).get("weights_fingerprint")
    except ValueError:
        fps[d] = None
same = None not in fps.values() and len(set(fps.values())) == 1
print(json.dumps({"name": "nccl_queue_depth_gpu_bitwise_cora", "value": same,
                  "fingerprints": fps}))
sys.exit(0 if same else 1)
PY
