#!/usr/bin/env bash
# Replicas, through the launcher on Cora: 2 parts x 2 replicas, 2 trainers,
# peers asked over gRPC. kill -9 of one replica of each part mid-run: the trainers and the
# peers fail over to the live replicas, the launcher reports each loss and (--server-restarts 1)
# starts the dead servers again, and the run ends with the weights fingerprint of an
# uninterrupted run (with one server per part), bit for bit.
# Then a trainer's death (point 4): kill -9 of trainer 1 mid-run with --restarts 1 and
# checkpoints every 5 steps; the launcher restarts the training group from the last checkpoint
# (servers kept running) and the run ends with the same fingerprint.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer
partition_cora "$WORK/cora2"
# --sampler server: the servers' streams are what fails over (on a GPU, --sampler auto would
# sample on the trainer and need no server once started).
FLAGS=(--model sage --epochs 30 --eval-every 30 --hidden 16 --fanouts "5,5" --batch-size 8 --seed 5
       --stall-timeout-s 2 --server-wait-s 30 --sampler server)
fingerprint() {  # fingerprint NAME RANK
  sed -n "s/^\[trainer [0-9]*\] rank $2 weights_fingerprint \([0-9a-f]*\)$/\1/p" "$WORK/$1.err"
}

timeout 300 "$LAUNCH" --partition "$WORK/cora2" --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/reg_full" -- "${FLAGS[@]}" >"$WORK/full.out" 2>"$WORK/full.err" ||
  { show "$WORK/full.err"; fail "uninterrupted run failed"; }
full=$(fingerprint full 0)
[[ -n $full ]] || { show "$WORK/full.err"; fail "no fingerprint in the uninterrupted run"; }

timeout 300 "$LAUNCH" --partition "$WORK/cora2" --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/reg" --replicas 2 --server-restarts 1 \
  --server-arg=--peer-sampling=rpc --server-arg=--peer-features=rpc \
  --server-arg=--stall-timeout-s=2 -- "${FLAGS[@]}" >"$WORK/replicas.out" 2>"$WORK/replicas.err" &
launcher=$!
deadline=$((SECONDS + 120))
until grep -q "^\[trainer 0\] rank 0 epoch 3:" "$WORK/replicas.err"; do
  ((SECONDS < deadline)) || { show "$WORK/replicas.err"; fail "the run did not reach epoch 3"; }
  sleep 0.05
done
[[ -s $WORK/reg/part_0.r1 && -s $WORK/reg/part_1 ]] || fail "replica entries missing in the registry"
victims=()
for spec in "0 --replica 1" "1 --replica 0"; do
  pid=$(pgrep -f -- "graphshard-server --partition $WORK/cora2 --part $spec " || true)
  [[ -n $pid ]] || fail "no server process for part ${spec/ --replica/ replica}"
  victims+=("$pid")
done
note "kill -9 of part 0 replica 1 and part 1 replica 0 (pids ${victims[*]})"
kill -KILL "${victims[@]}"
expect_kills_survived "$launcher" replicas "$full"
grep -q "restarting part 0 replica 1" "$WORK/replicas.err" || fail "part 0 replica 1 not restarted"
grep -q "restarting part 1 replica 0" "$WORK/replicas.err" || fail "part 1 replica 0 not restarted"
got=$(fingerprint replicas 0)
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "fingerprint $got after losing a replica of each part"

timeout 300 "$LAUNCH" --partition "$WORK/cora2" --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/reg_restart" --restarts 1 -- "${FLAGS[@]}" --checkpoint-dir "$WORK/ckpt" \
  --checkpoint-every 5 >"$WORK/restart.out" 2>"$WORK/restart.err" &
launcher=$!
deadline=$((SECONDS + 120))
until grep -q "^\[trainer 0\] rank 0 epoch 10:" "$WORK/restart.err"; do
  ((SECONDS < deadline)) || { show "$WORK/restart.err"; fail "the run did not reach epoch 10"; }
  sleep 0.05
done
trainer1=$(pgrep -f -- "graphshard-trainer --registry $WORK/reg_restart" |
  while read -r p; do grep -qz '^RANK=1$' "/proc/$p/environ" 2>/dev/null && echo "$p"; done)
[[ -n $trainer1 ]] || fail "no process of trainer 1"
note "kill -9 of trainer 1 (pid $trainer1)"
kill -KILL "$trainer1"
wait_pid "$launcher" 240
show "$WORK/restart.err"
[[ $WAIT_STATUS == 0 ]] || fail "the launcher exited with $WAIT_STATUS after a trainer's death"
grep -q "\[launch\] trainer 1 exited with status 137" "$WORK/restart.err" ||
  fail "the launcher did not name the dead trainer"
grep -q "restarting the training group (restart 1 of 1) from its last checkpoint" \
  "$WORK/restart.err" || fail "the training group was not restarted"
grep -q "resuming from .* at epoch" "$WORK/restart.err" || fail "the restarted trainers did not resume"
got=$(fingerprint restart 0)
[[ $got == "$full" ]] || fail "weights after the trainer's death $got differ from the uninterrupted run's $full"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: fingerprint $got after losing a replica of each part, and after losing a trainer"
