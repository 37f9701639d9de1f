#!/usr/bin/env bash
# A permanently stopped server (SIGSTOP: a hung host) is detected and named,
# with real processes on Cora through the launcher: 2 servers (peers asked over gRPC,
# --stall-timeout-s 1) and 2 trainers (--stall-timeout-s 2 --server-wait-s 2; trainer r reads
# part r). Server 1 is stopped mid-run and never continued:
# - trainer 1 notices its server within 2 x 2 s and fails naming part 1, its address and host;
# - server 0 notices its peer part 1 (its calls fail) and says so, naming part and address
#   (trainer 0 waits in the all-reduce for trainer 1 meanwhile, so its stream from server 0 is
#   not read);
# - the launcher exits non-zero within the detection bound plus the 2 s wait for a live server
#   and its probes, and its teardown (it continues the stopped server so that it can take its
#   SIGTERM): 15 s allowed on a loaded 2-core machine.
# --sampler server: the servers' streams are what stalls. (On a GPU, --sampler auto samples on
# the trainer, which needs no server after its start: that job trains on and exits 0.)
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer
partition_cora "$WORK/cora2"
REG=$WORK/registry
timeout 300 "$LAUNCH" --partition "$WORK/cora2" --trainers 2 --bin-dir "$BIN" --registry "$REG" \
  --server-arg=--stall-timeout-s=1 --server-arg=--peer-sampling=rpc \
  --server-arg=--peer-features=rpc -- --model sage --epochs 1000 --eval-every 0 --hidden 16 \
  --fanouts 5,5 --batch-size 8 --stall-timeout-s 2 --server-wait-s 2 --sampler server \
  >"$WORK/out" 2>"$WORK/err" &
launcher=$!
deadline=$((SECONDS + 120))
until grep -q "^\[trainer 1\] rank 1 epoch 2:" "$WORK/err"; do
  ((SECONDS < deadline)) || { show "$WORK/err"; fail "trainer 1 did not reach epoch 2"; }
  sleep 0.05
done
addr1=$(cat "$REG/part_1")
server1=$(pgrep -f -- "graphshard-server --partition $WORK/cora2 --part 1 " || true)
[[ -n $server1 ]] || fail "no process of server 1"
kill -STOP "$server1"
stopped=$EPOCHREALTIME
wait_pid "$launcher" 60
took=$(python3 -c "import sys; print(f'{float(sys.argv[1]) - float(sys.argv[2]):.1f}')" \
  "$EPOCHREALTIME" "$stopped")
kill -CONT "$server1" 2>/dev/null || true
show "$WORK/err"
[[ $WAIT_STATUS != timeout ]] || fail "the job still ran 60 s after server 1 was stopped"
[[ $WAIT_STATUS != 0 ]] || fail "the job exited 0 with server 1 stopped"
grep -q "ignored SIGTERM" "$WORK/err" && fail "the launcher had to SIGKILL the stopped server"
note "the job exited $WAIT_STATUS ${took}s after SIGSTOP of server 1"
python3 -c "import sys; sys.exit(float(sys.argv[1]) > 15)" "$took" ||
  fail "the stopped server took ${took}s to detect (bound 15 s)"
# Trainer 1, reading part 1: its stream stalled or lost the connection, named.
grep -q "^\[trainer 1\] rank 1: part 1: stream broken .*part 1, server $addr1 on host " "$WORK/err" ||
  fail "trainer 1 did not report part 1's stream, naming part, address and host"
# Server 0 lost its peer part 1 (its calls timed out or could not connect).
grep -q "^\[server 0\] graphshard-server: peer part 1 at $addr1 lost" "$WORK/err" ||
  fail "server 0 did not report its stopped peer part 1 at $addr1"
grep -q "^\[trainer [01]\] graphshard-trainer: error: .*part 1" "$WORK/err" ||
  fail "no trainer's final error names part 1"
note ok
