"""Shared by the Python tests (tests/python/*_test.py): real binaries, real servers on port 0,
a fresh work folder, and a timeout on every wait. Usage: SCRIPT BIN_DIR SOURCE_DIR, with
PYTHONPATH=<build>/python (CTest sets it)."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Env:
    def __init__(self):
        if len(sys.argv) < 3:
            sys.exit(f"usage: {sys.argv[0]} BIN_DIR SOURCE_DIR")
        self.bin = os.path.abspath(sys.argv[1])
        self.src = os.path.abspath(sys.argv[2])
        self.work = tempfile.mkdtemp(prefix="graphshard-py.")
        self.procs = []

    def need(self, *names):
        for n in names:
            if not os.access(os.path.join(self.bin, n), os.X_OK):
                fail(f"{self.bin}/{n} not built")

    def _partition(self, dataset, parts, extra=()):
        """tests/data/<dataset> into `parts` random parts (seed 1) under the work folder."""
        self.need("graphshard-partition")
        out = os.path.join(self.work, f"{dataset}{parts}")
        run([os.path.join(self.bin, "graphshard-partition"), "partition", "--input",
             os.path.join(self.src, "tests/data", dataset), "--parts", str(parts), "--method",
             "random", *extra, "--seed", "1", "--out", out], 120)
        return out

    def partition_cora(self, parts=2):
        return self._partition("cora", parts, ["--undirected"])

    def partition_imdb(self, parts=2):
        return self._partition("imdb", parts)

    def start_servers(self, partition, parts=2, registry=None, extra=()):
        """Starts one server per part (port 0, --registry); returns (registry, addresses)."""
        self.need("graphshard-server")
        registry = registry or os.path.join(self.work, "registry")
        procs = []
        for k in range(parts):
            log = open(os.path.join(self.work, f"server_{k}.log"), "w")
            procs.append(subprocess.Popen(
                [os.path.join(self.bin, "graphshard-server"), "--partition", partition, "--part",
                 str(k), "--listen", "127.0.0.1:0", "--registry", registry, "--threads", "2",
                 *extra], stdout=log, stderr=subprocess.STDOUT))
        self.procs += procs
        addresses = []
        for k in range(parts):
            path = os.path.join(registry, f"part_{k}")
            deadline = time.time() + 60
            while not (os.path.exists(path) and os.path.getsize(path) > 0):
                if time.time() > deadline or procs[k].poll() is not None:
                    self.show(f"server_{k}.log")
                    fail(f"server {k} did not register within 60 s")
                time.sleep(0.1)
            addresses.append(open(path).read().strip())
        self.servers = procs
        return registry, addresses

    def show(self, name):
        path = os.path.join(self.work, name)
        if os.path.exists(path):
            print(f"---- {name}\n{open(path, errors='replace').read()}", file=sys.stderr)

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.work, ignore_errors=True)


def run(cmd, timeout, env=None, check=True):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        fail(f"timed out after {timeout} s: {' '.join(cmd)}")
    if check and r.returncode != 0:
        print(r.stdout, r.stderr, sep="\n", file=sys.stderr)
        fail(f"exit status {r.returncode}: {' '.join(cmd)}")
    return r


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    raise SystemExit(1)


def collect_ranks(procs, timeout, what="rank"):
    """The stdout of every process of `procs` (Popen, text pipes), in order; a process that
    runs past `timeout` seconds (all are killed) or exits non-zero (its stderr shown) fails."""
    outs = []
    for rank, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            fail(f"{what} {rank} did not finish within {timeout} s")
        if p.returncode != 0:
            print(f"---- {what} {rank} stderr\n{err[-4000:]}", file=sys.stderr)
            fail(f"{what} {rank} exited with status {p.returncode}")
        outs.append(out)
    return outs


def expect_error(kind, mention, fn):
    """fn() must raise `kind` whose message names `mention`; anything else fails the test."""
    try:
        fn()
    except kind as e:
        if mention not in str(e):
            fail(f"{kind.__name__} {e!r} does not name {mention!r}")
        return
    except Exception as e:  # noqa: BLE001 - the wrong kind is the failure reported
        fail(f"expected {kind.__name__} naming {mention!r}, got {type(e).__name__}: {e}")
    fail(f"expected {kind.__name__} naming {mention!r}; nothing raised")


def note(message):
    print(f"-- {message}", file=sys.stderr, flush=True)


def expect_installed(env, venv, pip_env):
    """`import graphshard` with `venv`'s python, outside the source and build trees: it must come
    from the venv (module included) and answer as the build tree's module does."""
    r = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                        "import graphshard, graphshard._graphshard as m; "
                        "print(graphshard.__file__); print(m.__file__); "
                        "print(graphshard.stream_shuffle_seed(1, 0))"],
                       capture_output=True, text=True, timeout=120, cwd=env.work, env=pip_env)
    if r.returncode != 0:
        fail(f"import after pip install: {r.stderr}")
    init, module, seed = r.stdout.split()
    site = os.path.join(venv, "lib")
    if not (init.startswith(site) and module.startswith(site)):
        fail(f"graphshard imported from {init}, {module}, not the venv")
    import graphshard  # the build tree's (PYTHONPATH), for the same answer
    if int(seed) != graphshard.stream_shuffle_seed(1, 0):
        fail("the installed module answers differently")
    return module
