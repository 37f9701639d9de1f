#!/usr/bin/env python3
"""graphshard-trainer --tensorboard DIR writes a TensorBoard event file that reads back (TFRecord
framing with CRC-32C checked by graphshard.tensorboard, our reader, since neither TensorFlow
nor the tensorboard package is in Debian) with one event per epoch whose scalars equal the
same run's --metrics-file records; a flipped byte is caught by the CRC. Then
tools/plot_metrics.py turns that metrics file into a PNG, and refuses a file without epochs.
Usage: trainer_curves_test.py BIN_DIR SOURCE_DIR (PYTHONPATH=<build>/python)."""
import glob
import json
import math
import os
import sys

import gs_testlib as t
from graphshard import tensorboard

EPOCHS = 3
TAGS = {"train/loss": "loss", "train/acc": "train_acc", "eval/val_acc": "val_acc",
        "eval/test_acc": "test_acc", "perf/seeds_per_s": "seeds_per_s",
        "perf/data_wait_s": "data_wait_s", "perf/data_wait_fraction": "data_wait_fraction",
        "perf/epoch_time_s": "time_s"}


def main():
    env = t.Env()
    try:
        env.need("graphshard-trainer")
        partition = env.partition_cora()
        _, addresses = env.start_servers(partition)
        metrics = os.path.join(env.work, "metrics.jsonl")
        tb = os.path.join(env.work, "tb", "run1")
        t.run([os.path.join(env.bin, "graphshard-trainer"), "--servers", ",".join(addresses),
               "--epochs", str(EPOCHS), "--eval-every", "1", "--metrics-file", metrics,
               "--tensorboard", tb, "--seed", "1"], 300,
              env=dict(os.environ, RANK="0", WORLD_SIZE="1"))
        files = glob.glob(os.path.join(tb, "events.out.tfevents.*"))
        if len(files) != 1:
            t.fail(f"expected one event file in {tb}, found {files}")
        events = list(tensorboard.events(files[0]))
        if events[0].get("file_version") != "brain.Event:2":
            t.fail(f"first event is not the file_version event: {events[0]}")
        epochs = [json.loads(line) for line in open(metrics)]
        epochs = [r for r in epochs if r["event"] == "epoch"]
        scalar_events = events[1:]
        if [e["step"] for e in scalar_events] != [r["epoch"] for r in epochs] or \
                len(epochs) != EPOCHS:
            t.fail(f"event steps {[e['step'] for e in scalar_events]} vs epochs "
                   f"{[r['epoch'] for r in epochs]}")
        for e, r in zip(scalar_events, epochs):
            values = dict(e["summary"])
            if set(values) != set(TAGS):
                t.fail(f"epoch {r['epoch']}: tags {sorted(values)}, expected {sorted(TAGS)}")
            for tag, key in TAGS.items():
                if not math.isclose(values[tag], r[key], rel_tol=1e-6, abs_tol=1e-6):
                    t.fail(f"epoch {r['epoch']} {tag} = {values[tag]} but the metrics file "
                           f"says {key} = {r[key]}")
            if e["wall_time"] < 1.6e9:
                t.fail(f"wall_time {e['wall_time']}")
        t.note(f"{len(scalar_events)} epoch events match the metrics file; last "
               f"{dict(scalar_events[-1]['summary'])}")

        blob = bytearray(open(files[0], "rb").read())
        blob[len(blob) // 2] ^= 0x01
        corrupt = os.path.join(env.work, "corrupt.tfevents")
        open(corrupt, "wb").write(bytes(blob))
        try:
            list(tensorboard.records(corrupt))
        except tensorboard.CorruptRecord as e:
            t.note(f"flipped byte caught: {e}")
        else:
            t.fail("a flipped byte was not caught by the CRC check")

        plot = os.path.join(env.src, "tools", "plot_metrics.py")
        png = os.path.join(env.work, "curves.png")
        r = t.run([sys.executable, plot, metrics, "-o", png], 120)
        if r.stdout.strip() != png:
            t.fail(f"plot_metrics printed {r.stdout!r}, expected the PNG path")
        head = open(png, "rb").read(24)
        if head[:8] != b"\x89PNG\r\n\x1a\n":
            t.fail("plot_metrics did not write a PNG")
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        if width < 500 or height < 300:
            t.fail(f"PNG is {width}x{height}")
        empty = os.path.join(env.work, "empty.jsonl")
        open(empty, "w").write('{"event": "run"}\n')
        r = t.run([sys.executable, plot, empty], 120, check=False)
        if r.returncode != 1 or "no epoch records" not in r.stderr:
            t.fail(f"a file without epochs: status {r.returncode}, {r.stderr!r}")
        t.note(f"ok: {png} {width}x{height}")
    finally:
        env.cleanup()


if __name__ == "__main__":
    sys.exit(main())
