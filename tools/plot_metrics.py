#!/usr/bin/env python3
"""Plots a graphshard-trainer metrics file (--metrics-file, JSONL) as a PNG: training loss per
epoch (left) and accuracies per epoch (right: train, and val / test where evaluated).
A resumed run appends to the same file; an epoch that appears twice is plotted once (the last
record wins).

    tools/plot_metrics.py METRICS.jsonl [-o OUT.png] [--title TEXT]

Writes OUT.png (default: METRICS with .png) and prints its path. Exit 1 with a message naming
the file and line for a malformed file or one without epoch records, 2 for bad arguments.
matplotlib with the Agg backend (no display needed; Debian's python3-matplotlib).
"""
import argparse
import json
import os
import sys


def read_epochs(path):
    epochs = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not JSON ({e.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{lineno}: not a JSON object")
            if record.get("event") != "epoch":
                continue
            for key in ("epoch", "loss", "train_acc"):
                if not isinstance(record.get(key), (int, float)):
                    raise ValueError(f"{path}:{lineno}: epoch record without a number '{key}'")
            epochs[int(record["epoch"])] = record
    if not epochs:
        raise ValueError(f"{path}: no epoch records (is it a --metrics-file of graphshard-trainer?)")
    return [epochs[e] for e in sorted(epochs)]


def plot(records, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["epoch"] for r in records]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(x, [r["loss"] for r in records], marker="o", label="train loss")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("loss")
    ax_loss.set_title("loss")
    ax_loss.grid(alpha=0.3)
    ax_acc.plot(x, [r["train_acc"] for r in records], marker="o", label="train")
    for key, label in (("val_acc", "val"), ("test_acc", "test")):
        pts = [(r["epoch"], r[key]) for r in records if isinstance(r.get(key), (int, float))]
        if pts:
            ax_acc.plot(*zip(*pts), marker="s", label=label)
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy")
    ax_acc.set_ylim(0, 1)
    ax_acc.set_title("accuracy")
    ax_acc.grid(alpha=0.3)
    ax_acc.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", help="JSONL written by graphshard-trainer --metrics-file")
    ap.add_argument("-o", "--out", help="PNG to write (default: METRICS with .png)")
    ap.add_argument("--title", default="", help="figure title")
    args = ap.parse_args(argv)
    out = args.out or os.path.splitext(args.metrics)[0] + ".png"
    try:
        records = read_epochs(args.metrics)
    except (OSError, ValueError) as e:
        print(f"plot_metrics: error: {e}", file=sys.stderr)
        return 1
    try:
        plot(records, out, args.title)
    except OSError as e:
        print(f"plot_metrics: error: writing {out}: {e}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
