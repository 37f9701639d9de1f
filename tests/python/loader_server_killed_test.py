#!/usr/bin/env python3
"""A server killed (SIGKILL) while graphshard.Loader streams from it makes the loader raise
graphshard.Error naming that server, soon, instead of hanging: the RPC deadline is set far
longer (rpc_timeout_s=120) than the bound checked here (30 s), so only the broken connection
can be what ends the wait. A server stopped (SIGSTOP: a hung host, its connection open) does
the same within the loader's stall_timeout_s (2 s here; bound 15 s). The loader runs in a child
process so that a hang is a failed test, not a stuck CTest. Usage:
loader_server_killed_test.py BIN_DIR SOURCE_DIR."""
import json
import os
import signal
import subprocess
import sys
import time

BOUND_S = {"KILL": 30, "STOP": 15}
STALL_TIMEOUT_S = 2


def child(registry, server_pid, prefetch, how):
    import graphshard
    extra = dict(device="cpu", prefetch=4) if prefetch else {}
    if how == "STOP":
        extra["stall_timeout_s"] = STALL_TIMEOUT_S
    loader = graphshard.Loader(registry=registry, split="train", num_neighbors=[10, 5],
                               batch_size=1, rpc_timeout_s=120, output="plain", **extra)
    it = iter(loader)
    first = next(it)
    assert first is not None
    os.kill(server_pid, signal.SIGKILL if how == "KILL" else signal.SIGSTOP)
    killed = time.monotonic()
    try:
        for _ in range(3):  # at most 3 epochs: the error must come before
            for _ in it:
                pass
            it = iter(loader)
    except graphshard.Error as e:
        print(json.dumps({"error": str(e), "after_s": time.monotonic() - killed,
                          "is_runtime_error": isinstance(e, RuntimeError)}), flush=True)
        return
    print(json.dumps({"error": None}), flush=True)


def main():
    import gs_testlib as t
    env = t.Env()
    try:
        partition = env.partition_cora()
        # Batches read when asked, then read ahead by the loader's thread (the error crosses it).
        for how, prefetch in (("KILL", 0), ("KILL", 1), ("STOP", 0), ("STOP", 1)):
            registry = os.path.join(env.work, f"registry_{how}{prefetch}")
            check(t, env, partition, registry, prefetch, how)
    finally:
        env.cleanup()


def check(t, env, partition, registry, prefetch, how):
    registry, addresses = env.start_servers(partition, registry=registry)
    victim = env.servers[1]
    bound = BOUND_S[how]
    try:
        p = subprocess.run([sys.executable, __file__, "--child", registry, str(victim.pid),
                            str(prefetch), how], capture_output=True, text=True,
                           timeout=bound + 60)
        print(p.stderr, file=sys.stderr)
        if p.returncode != 0:
            t.fail(f"loader process exited with status {p.returncode}")
        r = json.loads(p.stdout.strip().splitlines()[-1])
        t.note(json.dumps(r))
        if r["error"] is None:
            t.fail("no error after the server was killed")
        if addresses[1] not in r["error"]:
            t.fail(f"the error does not name the killed server {addresses[1]}: {r['error']}")
        if not r["is_runtime_error"]:
            t.fail("graphshard.Error is not a RuntimeError")
        if how == "STOP" and "stalled" not in r["error"]:
            t.fail(f"the error does not say the stream stalled: {r['error']}")
        if how == "STOP" and r["after_s"] < STALL_TIMEOUT_S - 0.5:
            t.fail(f"raised after {r['after_s']:.1f} s, before stall_timeout_s")
        if r["after_s"] > bound:
            t.fail(f"the error took {r['after_s']:.1f} s")
        t.note(f"ok ({how}, prefetch {prefetch}): raised after {r['after_s']:.2f} s: "
               f"{r['error']}")
    except subprocess.TimeoutExpired:
        t.fail(f"the loader hung: no result within {bound + 60} s of start")
    if victim.poll() is None:
        victim.kill()  # a stopped server does not take SIGTERM
        victim.wait(timeout=20)
    for s in env.servers:
        if s.poll() is None:
            s.terminate()
            s.wait(timeout=20)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5])
    else:
        main()
