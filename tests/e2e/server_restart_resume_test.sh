#!/usr/bin/env bash
# A trainer outlives its servers (stall detection and resume), with real processes on Cora:
# 2 servers (peers asked over gRPC, so that the servers depend on each other) and 1 trainer
# reading both parts. Against an uninterrupted run on the same servers:
# 1. SIGSTOP of server 1 for 4 s (twice --stall-timeout-s 2): the trainer notices the stall,
#    waits for the server (--server-wait-s), resumes when it is continued;
# 2. kill -9 of server 1 mid-run and a restart on a new port (its registry entry rewritten):
#    the trainer and server 0 (its peer) find it again;
# the run finishes with the uninterrupted run's weights fingerprint, bit for bit (both runs
# under --deterministic, the flag the GPU fault benchmark uses: every op it runs has a kernel).
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-trainer
partition_cora "$WORK/cora2"
REG=$WORK/registry

# start_server K: server of part K in the background (its pid in SERVER_PID[K]), registered.
declare -A SERVER_PID=()
start_server() {
  local k=$1 before
  before=$(cat "$REG/part_$k" 2>/dev/null || true)
  "$BIN/graphshard-server" --partition "$WORK/cora2" --part "$k" --listen 127.0.0.1:0 \
    --registry "$REG" --stall-timeout-s 2 --rpc-timeout-s 5 --peer-sampling rpc \
    --peer-features rpc >>"$WORK/server$k.log" 2>&1 &
  SERVER_PID[$k]=$!
  local deadline=$((SECONDS + 60))
  until [[ -s $REG/part_$k && $(cat "$REG/part_$k") != "$before" ]]; do
    ((SECONDS < deadline)) || { show "$WORK/server$k.log"; fail "server $k did not register"; }
    sleep 0.1
  done
}
# --sampler server: the servers' streams are what resumes (on a GPU, --sampler auto would
# sample on the trainer and need no server once started).
FLAGS=(--registry "$REG" --model sage --epochs 30 --eval-every 30 --hidden 16 --fanouts "5,5"
       --batch-size 8 --seed 3 --stall-timeout-s 2 --server-wait-s 30 --deterministic
       --sampler server)
fingerprint() { sed -n 's/^rank 0 weights_fingerprint \([0-9a-f]*\)$/\1/p' "$1"; }
# wait_epoch LOG N: until the trainer has finished epoch N (bounded).
wait_epoch() {
  local deadline=$((SECONDS + 120))
  until grep -q "^rank 0 epoch $2:" "$1"; do
    ((SECONDS < deadline)) || { show "$1"; fail "trainer did not reach epoch $2"; }
    sleep 0.05
  done
}

start_server 0
start_server 1
timeout 300 "$BIN/graphshard-trainer" "${FLAGS[@]}" >"$WORK/full.out" 2>"$WORK/full.err" ||
  { show "$WORK/full.err"; fail "uninterrupted run failed"; }
full=$(fingerprint "$WORK/full.err")
[[ -n $full ]] || { show "$WORK/full.err"; fail "no weights fingerprint in the uninterrupted run"; }
note "uninterrupted: $full"

timeout 300 "$BIN/graphshard-trainer" "${FLAGS[@]}" >"$WORK/broken.out" 2>"$WORK/broken.err" &
trainer=$!
wait_epoch "$WORK/broken.err" 3
note "SIGSTOP server 1 for 4 s"
kill -STOP "${SERVER_PID[1]}"
sleep 4
kill -CONT "${SERVER_PID[1]}"
wait_epoch "$WORK/broken.err" 12
old=$(cat "$REG/part_1")
note "kill -9 server 1 ($old), restart"
kill -KILL "${SERVER_PID[1]}"
wait "${SERVER_PID[1]}" 2>/dev/null || true
sleep 1
start_server 1
new=$(cat "$REG/part_1")
[[ $new != "$old" ]] || fail "the restarted server kept the address $old"
note "server 1 restarted at $new"
wait_pid "$trainer" 240
show "$WORK/broken.err"
[[ $WAIT_STATUS == 0 ]] || fail "the interrupted run exited with $WAIT_STATUS"
grep -q "part 1.*stall\|stalled\|stream broken" "$WORK/broken.err" || fail "no stall was reported"
grep -q "resumed at batch .* on part 1, server $new" "$WORK/broken.err" ||
  fail "the trainer did not resume on the restarted server $new"
got=$(fingerprint "$WORK/broken.err")
[[ $got == "$full" ]] || fail "weights after the failures $got differ from the uninterrupted run's $full"
kill -TERM "${SERVER_PID[0]}" "${SERVER_PID[1]}"
for k in 0 1; do
  wait_pid "${SERVER_PID[$k]}" 30
  [[ $WAIT_STATUS == 0 ]] || fail "server $k exited with $WAIT_STATUS at SIGTERM"
done
note "ok: fingerprint $got after a stall and a restart"
