#!/usr/bin/env bash
# When a trainer fails (here: an unknown flag), the launcher stops the other trainer and both
# servers and exits non-zero, leaving no graphshard process behind.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer

partition_cora "$WORK/cora2"
status=0
timeout 120 "$LAUNCH" --partition "$WORK/cora2" --servers 2 --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/registry" --server-wait-s 60 --grace-s 10 -- --no-such-flag-for-e2e 1 \
  >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
show "$WORK/stderr"
((status != 124)) || fail "launcher still running after 120 s"
((status != 0)) || fail "launcher exited 0 although its trainers failed"
left=$(procs_in_work)
[[ -z $left ]] || fail "left running: $(ps -o args= -p "${left//$'\n'/,}")"
[[ -z $(pgrep -f -- "--registry $WORK/registry" || true) ]] || fail "a server or trainer survived"
grep -q 'trainer [01] exited with status' "$WORK/stderr" || fail "launcher did not say which trainer failed"
note "ok: launcher status $status"
