# shellcheck shell=bash disable=SC2034  # variables are for the sourcing test
# Shared by the deployment tests (sourced, not run). Usage in a test:
#   source "$(dirname "$0")/lib.sh" "$@"     # args: BIN_DIR SOURCE_DIR
# gives BIN, SRC, LAUNCH, a fresh WORK folder (mode 755: daemons running as other users read it;
# removed at exit, with any process still running from it), `at_exit CMD` (run in reverse order
# at exit, before WORK goes), and helpers. These tests need root and system tools: when either
# is missing they FAIL with a clear message (never skip: CI runs them as root with
# deploy/install-deps.sh's packages installed). Every external command runs under `timeout`.
set -euo pipefail

(($# >= 2)) || { echo "usage: $0 BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(readlink -f "$1")
SRC=$(readlink -f "$2")
LAUNCH=$SRC/deploy/graphshard-launch
WORK=$(mktemp -d "${TMPDIR:-/tmp}/graphshard-deploy.XXXXXX")
chmod 755 "$WORK"
# A test run from inside a SLURM job (or a trainer's shell) must not inherit its variables.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^SLURM_' || true)
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK GLOO_SOCKET_IFNAME GRAPHSHARD_HOME

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
note() { echo "-- $(date +%T) $*" >&2; }

exit_hooks=()
at_exit() { exit_hooks+=("$*"); }

# graphshard processes (servers, trainers, health checks, launchers, job scripts) whose command
# line mentions WORK: this test's only. (Not the test's own daemons, which also name WORK.)
procs_in_work() { pgrep -f -- "graphshard-(server|trainer|health|launch|slurm-job) .*$WORK" || true; }

deploy_cleanup() {
  local status=$? i pids
  set +e
  trap '' INT TERM
  for ((i = ${#exit_hooks[@]} - 1; i >= 0; i--)); do eval "${exit_hooks[i]}"; done
  pids=$(procs_in_work)
  if [[ -n $pids ]]; then
    echo "left running at exit (killed now):" >&2
    ps -o pid,args -p "${pids//$'\n'/,}" >&2
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap deploy_cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# watchdog SECONDS: SIGTERM to this test after SECONDS, so that its teardown runs before CTest's
# TIMEOUT kills it (CTest's kill would leave the daemons behind). Keep SECONDS + the longest
# single step's `timeout` below the CTest TIMEOUT.
watchdog() {
  (
    trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    sleep "$1" &
    sp=$!
    wait "$sp" && echo "FAIL: $(basename "$0") still running after $1 s: stopping it" >&2 &&
      kill -TERM $$
  ) &
  at_exit "kill -TERM $! 2>/dev/null"
}

need_root() {
  ((EUID == 0)) || fail "$(basename "$0") needs root ($1); CI runs it as root. Run: sudo ctest -L ${2:-deploy}"
}

# need_tools CMD...: fails naming the missing commands and the package that has them.
need_tools() {
  local c missing=()
  for c in "$@"; do command -v "$c" >/dev/null || missing+=("$c"); done
  ((${#missing[@]} == 0)) ||
    fail "missing ${missing[*]}: install deploy/install-deps.sh's packages (slurm-wlm munge iproute2 ...)"
}

need_bin() {
  local b
  for b in "$@"; do
    [[ -x $BIN/$b ]] || fail "$BIN/$b not built"
  done
}

# show FILE: prints a file (a step's output) for the test log.
show() {
  echo "---- $1" >&2
  cat "$1" >&2 || true
}

# make_graph OUT_PARTITION: the small products-like graph of these tests (3000 nodes, average
# degree 10, 8 classes), in 2 random parts (undirected). ~1 s.
make_graph() {
  need_bin graphshard-partition
  timeout 60 "$BIN/graphshard-partition" generate --kind products --seed 1 --num-nodes 3000 \
    --avg-degree 10 --out "$WORK/graph" >"$WORK/generate.log" 2>&1 ||
    { show "$WORK/generate.log"; fail "graphshard-partition generate"; }
  timeout 60 "$BIN/graphshard-partition" partition --input "$WORK/graph" --parts 2 \
    --method random --undirected --seed 1 --out "$1" >"$WORK/partition.log" 2>&1 ||
    { show "$WORK/partition.log"; fail "graphshard-partition partition"; }
}

# check_summary LINE MIN_ACC WORLD_SIZE: LINE is a bare JSON summary with test_acc >= MIN_ACC.
check_summary() {
  [[ $1 == \{* ]] || fail "no bare JSON summary line (got '$1')"
  python3 - "$@" <<'PY' || fail "JSON summary check failed: $1"
import json, sys
s = json.loads(sys.argv[1])
min_acc, world = float(sys.argv[2]), int(sys.argv[3])
assert s["world_size"] == world, f"world_size {s['world_size']} != {world}"
# null = not measured (no evaluation ran, trainer/README.md); these runs evaluate.
assert s["test_acc"] is not None and s["val_acc"] is not None, f"no accuracy: {s}"
assert s["test_acc"] >= min_acc, f"test_acc {s['test_acc']} < {min_acc}"
print(f"-- test_acc {s['test_acc']:.4f} val_acc {s['val_acc']:.4f} world_size {world}", file=sys.stderr)
PY
}

# free_ports N: N distinct free TCP ports in 20000-32000 (below the ephemeral range).
free_ports() {
  python3 - "$1" <<'PY'
import random, socket, sys
want, got = int(sys.argv[1]), set()
while len(got) < want:
    port = random.randint(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", port))
        got.add(port)
    except OSError:
        pass
    finally:
        s.close()
print(" ".join(map(str, sorted(got))))
PY
}

# pid_alive PID: a live process (a zombie is not: PID 1 here may never reap daemons).
pid_alive() {
  local state
  state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}
