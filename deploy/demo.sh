#!/usr/bin/env bash
# The demo: build, generate a small ogbn-products-like graph, partition it in two, and train
# GraphSAGE with 2 partition servers and 2 trainers on this host (a couple of minutes on 2 cores).
# stdout carries only the per-epoch lines and the final JSON summary; build, data and
# server/trainer logs go to stderr, and so does the last line: the path of the PNG of loss and
# accuracy per epoch (tools/plot_metrics.py over the run's --metrics-file; the TensorBoard event
# file is in <work>/tensorboard: `tensorboard --logdir <work>/tensorboard` where installed).
#   GRAPHSHARD_DEMO_DIR=D    work folder (default out/demo; regenerated on every run)
#   GRAPHSHARD_BUILD_DIR=D   build folder (default build, as deploy/build.sh)
# Extra arguments go to the trainers, after the demo's own (e.g. `deploy/demo.sh --epochs 10`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

deploy/build.sh >&2   # stdout is the training output only
bin=$(readlink -f "${GRAPHSHARD_BUILD_DIR:-build}/bin")
work=${GRAPHSHARD_DEMO_DIR:-out/demo}

say() { printf '\n== %s\n' "$*" >&2; }

say "generating a products-like graph in $work/products"
rm -rf "$work/products"
mkdir -p "$work"
"$bin/graphshard-partition" generate --kind products --seed 1 --out "$work/products" \
  --num-nodes 20000 --avg-degree 10 >&2

say "partitioning it into 2 parts (random) in $work/products-2"
"$bin/graphshard-partition" partition --input "$work/products" --parts 2 --method random \
  --undirected --seed 1 --out "$work/products-2" --force >&2
"$bin/graphshard-partition" inspect "$work/products-2" >&2

say "training: 2 servers, 2 trainers (GraphSAGE)"
rm -rf "$work/metrics.jsonl" "$work/tensorboard"
deploy/graphshard-launch --partition "$work/products-2" --servers 2 --trainers 2 --bin-dir "$bin" \
  -- --model sage --epochs 5 --fanouts 10,5 --batch-size 256 --seed 1 \
  --metrics-file "$work/metrics.jsonl" --tensorboard "$work/tensorboard" "$@"

say "curves: loss and accuracy per epoch"
py=python3  # Debian's, with python3-matplotlib (deploy/install-deps.sh), when PATH has another
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && py=/usr/bin/python3
png=$("$py" tools/plot_metrics.py "$work/metrics.jsonl" -o "$work/curves.png" --title "demo")
echo "curves: $(readlink -f "$png")" >&2
