#!/usr/bin/env python3
"""A server killed (SIGKILL) while graphshard.Loader streams from it makes the loader raise
graphshard.Error naming that server, soon, instead of hanging: the RPC deadline is set far
longer (rpc_timeout_s=120) than the bound checked here (30 s), so only the broken connection
can be what ends the wait. The loader runs in a child process so that a hang is a failed test,
not a stuck CTest. Usage: loader_server_killed_test.py BIN_DIR SOURCE_DIR."""
import json
import os
import signal
import subprocess
import sys
import time

BOUND_S = 30


def child(registry, server_pid, prefetch):
    import graphshard
    extra = dict(device="cpu", prefetch=4) if prefetch else {}
    loader = graphshard.Loader(registry=registry, split="train", num_neighbors=[10, 5],
                               batch_size=1, rpc_timeout_s=120, output="plain", **extra)
    it = iter(loader)
    first = next(it)
    assert first is not None
    os.kill(server_pid, signal.SIGKILL)
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
        for prefetch in (0, 1):
            registry = os.path.join(env.work, f"registry{prefetch}")
            check(t, env, partition, registry, prefetch)
    finally:
        env.cleanup()


def check(t, env, partition, registry, prefetch):
    registry, addresses = env.start_servers(partition, registry=registry)
    victim = env.servers[1]
    try:
        p = subprocess.run([sys.executable, __file__, "--child", registry, str(victim.pid),
                            str(prefetch)], capture_output=True, text=True, timeout=BOUND_S + 60)
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
        if r["after_s"] > BOUND_S:
            t.fail(f"the error took {r['after_s']:.1f} s")
        t.note(f"ok (prefetch {prefetch}): raised after {r['after_s']:.2f} s: {r['error']}")
    except subprocess.TimeoutExpired:
        t.fail(f"the loader hung: no result within {BOUND_S + 60} s of start")
    for s in env.servers:
        if s.poll() is None:
            s.terminate()
            s.wait(timeout=20)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")
    else:
        main()
