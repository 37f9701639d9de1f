#!/usr/bin/env python3
"""Per-thread summary of a LibTorch profiler Chrome trace (graphshard-trainer --profile-dir).

  python3 tests/bench/trace_threads.py DIR/trace_rank0.json [STEPS]

Groups the trace's complete events by process, thread and category (cpu_op, cuda_runtime,
kernel, gpu_memcpy, ...) and prints, for the 14 busiest groups, the 10 heaviest names with
their count, time and longest event, per profiled step (STEPS, default 20: the trainer
profiles steps 10-29 of epoch 2). The CUDA runtime calls of every thread are in the trace
(CUPTI records them process-wide), the ATen operators only of threads that run under the
profiler (the training loop's and the autograd engine's, not the input pipeline's).
"""
import collections
import json
import sys


def main(path, steps):
    trace = json.load(open(path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    by_name = collections.defaultdict(lambda: [0, 0.0, 0.0])  # count, total us, longest us
    by_group = collections.defaultdict(float)  # (pid, tid, category) -> total us
    thread_names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            thread_names[(e.get("pid"), e.get("tid"))] = e["args"].get("name")
        if e.get("ph") != "X":
            continue
        group = (e.get("pid"), e.get("tid"), e.get("cat"))
        dur = float(e.get("dur", 0))
        row = by_name[group + (e.get("name", "")[:70],)]
        row[0] += 1
        row[1] += dur
        row[2] = max(row[2], dur)
        by_group[group] += dur
    for group, total in sorted(by_group.items(), key=lambda kv: -kv[1])[:14]:
        pid, tid, cat = group
        print(f"== pid {pid} tid {tid} ({thread_names.get((pid, tid))}) cat {cat}: "
              f"{total / steps / 1000:.3f} ms/step")
        rows = sorted(((v, k) for k, v in by_name.items() if k[:3] == group),
                      key=lambda r: -r[0][1])[:10]
        for (count, us, longest), key in rows:
            print(f"   {key[3]:70s} n/step {count / steps:6.1f} ms/step {us / steps / 1000:7.3f} "
                  f"max {longest / 1000:.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 20.0)
