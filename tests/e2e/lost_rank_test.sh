#!/usr/bin/env bash
# A trainer's death is named by the ranks that survive it, with real
# processes on Cora: 2 servers and 2 trainers (Gloo, rendezvous on a free port), no launcher
# (which would stop the survivors itself: on several nodes, the other nodes' trainers are the
# ones that must say which rank was lost).
# 1. kill -9 of rank 1 mid-run: rank 0 fails within 30 s, non-zero, naming "lost rank(s): 1";
# 2. kill -9 of rank 0 (the host of the rendezvous store): rank 1 fails naming rank 0 as lost;
# 3. SIGSTOP of rank 1 (a hung trainer, its connections open): rank 0's collective runs into
#    --collective-timeout-s (10 s) and it fails naming "lost rank(s): 1";
# 4. SIGSTOP of rank 0: rank 1 fails the same way, naming rank 0 (its store does not answer).
# Meanwhile rank 0's rendezvous store listens on MASTER_ADDR (127.0.0.1) only.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-trainer
partition_cora "$WORK/cora2"
REG=$WORK/registry
SERVERS=()
for k in 0 1; do
  "$BIN/graphshard-server" --partition "$WORK/cora2" --part "$k" --listen 127.0.0.1:0 \
    --registry "$REG" >"$WORK/server$k.log" 2>&1 &
  SERVERS+=($!)
done
deadline=$((SECONDS + 60))
until [[ -s $REG/part_0 && -s $REG/part_1 ]]; do
  ((SECONDS < deadline)) || { show "$WORK/server0.log"; show "$WORK/server1.log"; fail "servers did not register"; }
  sleep 0.1
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# run_pair NAME VICTIM [SIGNAL]: 2 trainers; kill -SIGNAL (KILL) of rank VICTIM once both
# finished epoch 2; waits for the survivor (60 s at most) and leaves its stderr in
# $WORK/NAME.<rank>.err. With STOP the victim hangs (its connections stay open): the survivor's
# collective runs into --collective-timeout-s (10 s in those runs), then names the rank.
declare -A PID=()
run_pair() {
  local name=$1 victim=$2 signal=${3:-KILL} port r extra=()
  [[ $signal == STOP ]] && extra=(--collective-timeout-s 10)
  port=$(free_port)
  for r in 0 1; do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r \
      timeout 300 "$BIN/graphshard-trainer" --registry "$REG" --model sage --epochs 1000 \
      --eval-every 0 --hidden 16 --fanouts 5,5 --batch-size 8 --seed 1 "${extra[@]}" \
      >"$WORK/$name.$r.out" 2>"$WORK/$name.$r.err" &
    PID[$r]=$!
  done
  deadline=$((SECONDS + 120))
  until grep -q "^rank 0 epoch 2:" "$WORK/$name.0.err" 2>/dev/null; do
    ((SECONDS < deadline)) || { show "$WORK/$name.0.err"; show "$WORK/$name.1.err"; fail "$name: epoch 2 not reached"; }
    sleep 0.05
  done
  # Rank 0's rendezvous store listens on MASTER_ADDR only (docs/SECURITY.md): 127.0.0.1 (gRPC
  # binds it on a dual-stack socket, shown as [::ffff:127.0.0.1]), no wildcard address.
  local listening
  listening=$(ss -Hltn "sport = :$port" | awk '{print $4}' | sed 's/^\[::ffff:\(.*\)\]/\1/' |
    sort -u | tr '\n' ' ')
  [[ $listening == "127.0.0.1:$port " ]] ||
    fail "$name: the rendezvous store listens on '$listening', expected 127.0.0.1:$port only"
  local trainer
  trainer=$(pgrep -P "${PID[$victim]}" -x graphshard-trai || true)  # the trainer under `timeout`
  [[ -n $trainer ]] || fail "$name: no process of rank $victim"
  note "$name: kill -$signal of rank $victim (pid $trainer)"
  kill "-$signal" "$trainer"
  local survivor=$((1 - victim))
  wait_pid "${PID[$survivor]}" 60
  show "$WORK/$name.$survivor.err"
  [[ $WAIT_STATUS != timeout ]] || fail "$name: rank $survivor still ran 60 s after rank $victim was lost"
  [[ $WAIT_STATUS != 0 ]] || fail "$name: rank $survivor exited 0 after rank $victim was lost"
  kill -KILL "$trainer" 2>/dev/null || true  # a stopped victim
}

run_pair one 1
grep -q "lost rank(s): 1 of 2" "$WORK/one.0.err" || fail "rank 0 did not name the lost rank 1"
run_pair zero 0
grep -q "rank 0 is lost" "$WORK/zero.1.err" || fail "rank 1 did not name the lost rank 0"
run_pair hung 1 STOP
grep -q "lost rank(s): 1 of 2" "$WORK/hung.0.err" || fail "rank 0 did not name the hung rank 1"
run_pair hungzero 0 STOP
grep -q "rank 0 is lost" "$WORK/hungzero.1.err" || fail "rank 1 did not name the hung rank 0"
kill -TERM "${SERVERS[@]}"
for pid in "${SERVERS[@]}"; do wait_pid "$pid" 30; done
note "ok: the survivors named the lost rank"
