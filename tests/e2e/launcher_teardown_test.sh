#!/usr/bin/env bash
# When a trainer fails, the launcher stops the other trainer and both servers and exits non-zero,
# leaving no graphshard process behind: (1) at start-up (an unknown flag), (2) mid-training (one
# trainer killed while the other waits for it in a gradient all-reduce).
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
note "start-up failure: launcher status $status"

timeout 300 "$LAUNCH" --partition "$WORK/cora2" --servers 2 --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/registry" --server-wait-s 60 --grace-s 10 -- --model sage --epochs 1000 \
  --eval-every 1000 >"$WORK/stdout2" 2>"$WORK/stderr2" &
launcher=$!
deadline=$((SECONDS + 120))
until grep -q '^epoch 1 ' "$WORK/stdout2"; do
  kill -0 "$launcher" 2>/dev/null || { show "$WORK/stderr2"; fail "launcher ended before epoch 1"; }
  ((SECONDS < deadline)) || { show "$WORK/stderr2"; fail "no epoch 1 within 120 s"; }
  sleep 0.2
done
victim=$(pgrep -n -f -- "graphshard-trainer --registry $WORK/registry" || true)
[[ -n $victim ]] || fail "no trainer process found"
note "killing trainer pid $victim mid-training"
kill -KILL "$victim"
start=$SECONDS
wait_pid "$launcher" 120
show "$WORK/stderr2"
[[ $WAIT_STATUS != timeout && $WAIT_STATUS != 124 ]] || fail "launcher did not stop within 120 s"
((WAIT_STATUS != 0)) || fail "launcher exited 0 although a trainer was killed"
grep -q 'trainer [01] exited with status 137' "$WORK/stderr2" || fail "launcher did not report the killed trainer"
left=$(procs_in_work)
[[ -z $left ]] || fail "left running: $(ps -o args= -p "${left//$'\n'/,}")"
note "ok: mid-training failure: launcher status $WAIT_STATUS after $((SECONDS - start)) s"
