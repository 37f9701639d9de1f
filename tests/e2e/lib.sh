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
# GRAPHSHARD_E2E_TRAINER_ARGS: more trainer flags for every launch (launch_with_trainer_args.sh).
[[ -n ${GRAPHSHARD_E2E_TRAINER_ARGS:-} ]] && LAUNCH=$SRC/tests/e2e/launch_with_trainer_args.sh
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

# expect_summary STDOUT MIN_TEST_ACC WORLD: the launcher's last stdout line is the bare JSON
# summary (docs/DESIGN.md's contract), the only JSON line, with world_size WORLD and
# test_acc >= MIN_TEST_ACC. Prints the summary's accuracies.
expect_summary() {
  local out=$1 min_acc=$2 world=$3 last
  last=$(tail -n 1 "$out")
  [[ $last == \{* ]] || fail "last stdout line is not a bare JSON object: '$last'"
  (($(grep -c '^{' "$out") == 1)) || fail "expected exactly one JSON line on stdout"
  python3 - "$last" "$min_acc" "$world" <<'PY' || fail "JSON summary check failed"
import json, sys
summary = json.loads(sys.argv[1])
for key in ("test_acc", "val_acc", "epochs", "seeds_per_s", "world_size", "data_wait_fraction"):
    assert key in summary, f"missing {key!r} in {summary}"
assert summary["world_size"] == int(sys.argv[3]), summary
# null = not measured (no evaluation ran, trainer/README.md); these runs evaluate.
assert summary["test_acc"] is not None and summary["val_acc"] is not None, f"no accuracy: {summary}"
assert 0.0 <= summary["val_acc"] <= 1.0, summary
assert 0.0 <= summary["data_wait_fraction"] <= 1.0, summary
assert summary["test_acc"] >= float(sys.argv[2]), f"test_acc {summary['test_acc']} < {sys.argv[2]}"
print(f"test_acc {summary['test_acc']} val_acc {summary['val_acc']}", file=sys.stderr)
PY
}

# expect_same_weights STDERR: ranks 0 and 1 printed the same weights fingerprint ("[trainer r]
# rank r weights_fingerprint HEX" on the launcher's stderr). Sets FINGERPRINT.
expect_same_weights() {
  local -A fp=()
  local rank hex
  while read -r rank hex; do fp[$rank]=$hex; done < <(
    sed -n 's/^\[trainer [0-9]*\] rank \([0-9]*\) weights_fingerprint \([0-9a-fA-F]*\)$/\1 \2/p' "$1")
  [[ -n ${fp[0]:-} && -n ${fp[1]:-} ]] || fail "missing weights_fingerprint line for rank 0 or 1"
  [[ ${fp[0]} == "${fp[1]}" ]] || fail "weights differ: rank 0 ${fp[0]}, rank 1 ${fp[1]}"
  FINGERPRINT=${fp[0]}
}

# launch_2x2 TIMEOUT_S PARTITION TRAINER_ARGS...: deploy/graphshard-launch with 2 servers and 2
# trainers on PARTITION (registry $WORK/registry), stdout and stderr into $WORK/stdout and
# $WORK/stderr (both shown); fails unless the launcher exits 0 within TIMEOUT_S.
launch_2x2() {
  local limit=$1 partition=$2 status=0
  shift 2
  timeout "$limit" "$LAUNCH" --partition "$partition" --servers 2 --trainers 2 --bin-dir "$BIN" \
    --registry "$WORK/registry" --server-wait-s 60 -- "$@" \
    >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  show "$WORK/stdout"
  show "$WORK/stderr"
  ((status == 0)) || fail "graphshard-launch exited with status $status"
}

# launch_named NAME PARTITION [trainer flags...]: 2 servers + 2 trainers through the launcher
# (300 s at most), stdout/stderr to WORK/NAME.stdout and .stderr; sets STATUS, fails nothing.
launch_named() {
  local name=$1 partition=$2
  shift 2
  STATUS=0
  timeout 300 "$LAUNCH" --partition "$partition" --servers 2 --trainers 2 --bin-dir "$BIN" \
    --registry "$WORK/registry_$name" --server-wait-s 60 -- "$@" \
    >"$WORK/$name.stdout" 2>"$WORK/$name.stderr" || STATUS=$?
}

# rank_fingerprint NAME RANK: the weights fingerprint rank RANK printed in WORK/NAME.stderr.
rank_fingerprint() {
  sed -n "s/^\[trainer [0-9]*\] rank $2 weights_fingerprint \([0-9a-f]*\)$/\1/p" "$WORK/$1.stderr"
}

# expect_kills_survived PID NAME REFERENCE: waits (240 s at most) for the launcher PID, which
# wrote WORK/NAME.err, after servers 0.1 and 1.0 were killed (kill -9) while trainers ran: it
# exits 0, reports both losses, and ranks 0 and 1 end with the weights fingerprint REFERENCE.
expect_kills_survived() {
  local pid=$1 name=$2 reference=$3 s fp0 fp1
  wait_pid "$pid" 240
  show "$WORK/$name.err"
  [[ $WAIT_STATUS == 0 ]] || fail "$name: the launcher exited with $WAIT_STATUS"
  for s in "server 0.1" "server 1.0"; do
    grep -q "\[launch\] $s exited with status 137 while trainers ran" "$WORK/$name.err" ||
      fail "$name: the launcher did not report the loss of $s"
  done
  fp0=$(sed -n 's/^\[trainer [0-9]*\] rank 0 weights_fingerprint \([0-9a-f]*\)$/\1/p' "$WORK/$name.err")
  fp1=$(sed -n 's/^\[trainer [0-9]*\] rank 1 weights_fingerprint \([0-9a-f]*\)$/\1/p' "$WORK/$name.err")
  [[ -n $fp0 && $fp0 == "$fp1" ]] || fail "$name: the ranks' weights differ ('$fp0', '$fp1')"
  [[ $fp0 == "$reference" ]] ||
    fail "$name: weights after the losses $fp0 differ from the uninterrupted run's $reference"
}
