#!/usr/bin/env python3
"""Per-stream summary of a LibTorch profiler Chrome trace (graphshard-trainer --profile-dir).

  python3 tests/bench/trace_streams.py DIR/trace_rank0.json [STEPS]

For each CUDA stream of the trace (kernels and copies; a stream is a trace thread), prints
per profiled step (STEPS, default 20): its busy time (the union of its events), the time
it overlaps the other streams' busy time, and its 4 heaviest kernel names. Then the GPU's
union over all streams, its span (first to last event) and its idle time inside the span.
Answers "is the step's stream slowed by work beside it, or does it wait": a compute stream
that is busy for less than the span, with the other streams busy in its gaps, waits for them.
"""
import collections
import json
import sys


def union(intervals):
    total, end = 0.0, None
    start = None
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - start
    return total


def overlap(a, b):
    """Time in both union(a) and union(b)."""
    return union(a) + union(b) - union(a + b)


def main(path, steps):
    trace = json.load(open(path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    by_stream = collections.defaultdict(list)
    names = collections.defaultdict(lambda: collections.defaultdict(float))
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        args = e.get("args", {})
        stream = (args.get("device", e.get("pid")), args.get("stream", e.get("tid")))
        s = float(e["ts"])
        d = float(e.get("dur", 0))
        by_stream[stream].append((s, s + d))
        names[stream][e.get("name", "")[:60]] += d
    every = [iv for ivs in by_stream.values() for iv in ivs]
    if not every:
        print("no GPU events in the trace")
        return
    for stream, ivs in sorted(by_stream.items(), key=lambda kv: -union(kv[1])):
        others = [iv for k, v in by_stream.items() if k != stream for iv in v]
        busy = union(ivs)
        print(f"stream {stream}: busy {busy / steps / 1000:.3f} ms/step, beside other streams "
              f"{overlap(ivs, others) / steps / 1000:.3f} ms/step, {len(ivs) / steps:.0f} events/step")
        for name, us in sorted(names[stream].items(), key=lambda kv: -kv[1])[:4]:
            print(f"    {us / steps / 1000:.3f} ms/step  {name}")
    span = max(e for _, e in every) - min(s for s, _ in every)
    busy = union(every)
    print(f"GPU: busy {busy / steps / 1000:.3f} ms/step, span {span / steps / 1000:.3f} ms/step, "
          f"idle {(span - busy) / steps / 1000:.3f} ms/step")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20)
