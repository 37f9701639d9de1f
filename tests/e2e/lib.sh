# shellcheck shell=bash disable=SC2034  # variables are for the sourcing test
# Shared by the end-to-end test scripts (sourced, not run). Usage in a test:
#   source "$(dirname "$0")/lib.sh" "$@"     # args: BIN_DIR SOURCE_DIR
# gives BIN, SRC, LAUNCH, a fresh WORK folder (removed at exit, with any process still running
# from it), and helpers. Every external command runs under `timeout`: nothing here can hang CI.
# A missing binary fails the test: nothing that did not run counts as passing.
set -euo pipefail

(($# >= 2)) || { echo "usage: $0 BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(readlink -f "$1")
SRC=$(readlink -f "$2")
LAUNCH=$SRC/deploy/graphshard-launch
CORA=$SRC/tests/data/cora
WORK=$(mktemp -d "${TMPDIR:-/tmp}/graphshard-e2e.XXXXXX")

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

note() { echo "-- $*" >&2; }

# Processes whose command line mentions WORK (servers, trainers, launcher of this test only).
procs_in_work() { pgrep -f -- "$WORK" || true; }

e2e_cleanup() {
  local status=$? pids
  pids=$(procs_in_work)
  if [[ -n $pids ]]; then
    echo "left running at exit (killed now):" >&2
    ps -o pid,args -p "${pids//$'\n'/,}" >&2 || true
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap e2e_cleanup EXIT

need_bin() {
  local b
  for b in "$@"; do
    [[ -x $BIN/$b ]] || fail "$BIN/$b not built"
  done
}

# health_timeout_flag: graphshard-health's deadline flag. The contract spells it --timeout-s;
# builds with Abseil flags know only --timeout_s (as in deploy/graphshard-launch).
health_timeout_flag() {
  local help
  help=$("$BIN/graphshard-health" --help 2>&1 || true)
  if [[ $help == *--timeout_s* ]]; then
    echo --timeout_s
  else
    echo --timeout-s
  fi
}

# show FILE: prints a file (stdout/stderr capture of a step) for the test log.
show() {
  echo "---- $1" >&2
  cat "$1" >&2 || true
}

# partition_cora OUT [PARTS]: Cora (undirected) in PARTS random parts.
partition_cora() {
  local out=$1 parts=${2:-2}
  need_bin graphshard-partition
  timeout 120 "$BIN/graphshard-partition" partition --input "$CORA" --parts "$parts" \
    --method random --undirected --seed 1 --out "$out" >"$WORK/partition.log" 2>&1 ||
    { show "$WORK/partition.log"; fail "graphshard-partition partition (status $?)"; }
}

# wait_for_file PATH SECONDS: 0 once PATH exists and is non-empty, 1 at the deadline.
wait_for_file() {
  local path=$1 deadline=$((SECONDS + $2))
  until [[ -s $path ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# wait_pid PID SECONDS: waits for a background child of this shell, at most SECONDS; sets
# WAIT_STATUS to its exit status, or to "timeout" (call it directly, not in $(...)).
wait_pid() {
  local pid=$1 deadline=$((SECONDS + $2))
  WAIT_STATUS=0
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      WAIT_STATUS=timeout
      return 0
    fi
    sleep 0.1
  done
  wait "$pid" || WAIT_STATUS=$?
}
