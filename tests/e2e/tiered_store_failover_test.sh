#!/usr/bin/env bash
# The tiered feature store's remote tier when servers die: Cora in 2 parts x 2 replicas, 2
# trainers with a 1 MiB device tier and --host-tier none (every other row fetched by id per
# batch through this host's servers, which ask their peers for the other part's rows). kill -9
# of one replica of each part mid-run, while the trainers fetch: the trainers' row fetches and
# the servers' peer reads fail over to the live replicas, the launcher restarts the dead
# servers, and the run ends with the weights of an uninterrupted run, bit for bit, having
# fetched rows over the network. Then both replicas of part 1 killed, no restart: the run
# stops with an error that names the part (a trainer's failed fetch or the launcher, whichever
# sees it first), not a hang and not a crash. Before that, one replica of each part stopped
# (SIGSTOP, never continued: a hung host whose sockets stay open): calls to them run into their
# deadlines and go to the live replicas, and the run ends with the same weights.
# On the GPU machine (GRAPHSHARD_E2E_TRAINER_ARGS="--device cuda --backend gloo --deterministic",
# both trainers on one GPU) the fetches also pass through the GPU's copies of rows the batches
# before hold (--reuse-rows).
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer
partition_cora "$WORK/cora2"
# --sampler server: the batches come from the servers' streams (they fail over too).
FLAGS=(--model sage --epochs 30 --eval-every 30 --hidden 16 --fanouts "5,5" --batch-size 8 --seed 5
       --stall-timeout-s 2 --server-wait-s 30 --sampler server
       --feature-store device --device-cache-mib 1 --host-tier none)
fingerprint() {  # fingerprint NAME RANK
  sed -n "s/^\[trainer [0-9]*\] rank $2 weights_fingerprint \([0-9a-f]*\)$/\1/p" "$WORK/$1.err"
}
# server_pid PART REPLICA: the pid of that server of this test.
server_pid() {
  pgrep -f -- "graphshard-server --partition $WORK/cora2 --part $1 --replica $2 " || true
}
# signal_servers SIGNAL PART REPLICA [PART REPLICA...]: kill -SIGNAL of those servers of this
# test (each must be running).
signal_servers() {
  local signal=$1 pid pids=()
  shift
  while (($# >= 2)); do
    pid=$(server_pid "$1" "$2")
    [[ -n $pid ]] || fail "no server process for part $1.$2"
    pids+=("$pid")
    shift 2
  done
  note "kill -$signal of servers ${pids[*]}"
  kill "-$signal" "${pids[@]}"
}
# start_replicas NAME RESTARTS: the launcher with 2 replicas a part, in the background (sets
# LAUNCHER); returns once rank 0 has finished epoch 3.
start_replicas() {
  local name=$1 restarts=$2 deadline
  timeout 300 "$LAUNCH" --partition "$WORK/cora2" --trainers 2 --bin-dir "$BIN" \
    --registry "$WORK/reg_$name" --replicas 2 --server-restarts "$restarts" \
    --server-arg=--peer-sampling=rpc --server-arg=--peer-features=rpc \
    --server-arg=--stall-timeout-s=2 -- "${FLAGS[@]}" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  LAUNCHER=$!
  deadline=$((SECONDS + 120))
  until grep -q "^\[trainer 0\] rank 0 epoch 3:" "$WORK/$name.err"; do
    ((SECONDS < deadline)) || { show "$WORK/$name.err"; fail "$name: the run did not reach epoch 3"; }
    kill -0 "$LAUNCHER" 2>/dev/null || { show "$WORK/$name.err"; fail "$name: the launcher exited"; }
    sleep 0.05
  done
}

note "uninterrupted run"
timeout 300 "$LAUNCH" --partition "$WORK/cora2" --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/reg_full" -- "${FLAGS[@]}" >"$WORK/full.out" 2>"$WORK/full.err" ||
  { show "$WORK/full.err"; fail "uninterrupted run failed"; }
full=$(fingerprint full 0)
[[ -n $full ]] || { show "$WORK/full.err"; fail "no fingerprint in the uninterrupted run"; }

note "replicas, one of each part killed"
start_replicas replicas 1
signal_servers KILL 0 1 1 0
expect_kills_survived "$LAUNCHER" replicas "$full"
python3 - "$(tail -n 1 "$WORK/replicas.out")" <<'PY' || fail "the run did not fetch rows"
import json, sys
tiers = json.loads(sys.argv[1])["feature_tiers"]
assert tiers["remote_hit_rate"] > 0.5 and tiers["network_mib"] > 0, tiers
print(f"tiers {tiers}", file=sys.stderr)
PY
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "fingerprint $full after losing a replica of each part mid-fetch"

note "replicas, one of each part stopped (SIGSTOP: a hung host, its connections still open)"
start_replicas hung 1
signal_servers STOP 0 1 1 0
stopped_at=$SECONDS
wait_pid "$LAUNCHER" 240
show "$WORK/hung.err"
[[ $WAIT_STATUS == 0 ]] || fail "hung: the launcher exited with $WAIT_STATUS"
# Every call to a hung server gives up within the 2 s timeouts (servers' peer calls within
# --stall-timeout-s, over either transport; trainers' calls by keepalive), so the rest of the
# run (~4 s uninterrupted) ends well within 25 s. A peer call left on the servers' 30 s
# --rpc-timeout-s takes longer than that.
took=$((SECONDS - stopped_at))
((took < 25)) || fail "hung: the run took ${took}s after the stop (a call waited past the 2 s timeouts)"
note "ended ${took}s after the stop"
for rank in 0 1; do
  got=$(fingerprint hung "$rank")
  [[ $got == "$full" ]] ||
    fail "hung: rank $rank's weights '$got' differ from the uninterrupted run's $full"
done
# The launcher stops its servers at the end, the stopped ones too (kill -9 reaches them).
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher (stopped servers?)"
note "fingerprint $full with a replica of each part hung"

note "no replica left for part 1"
start_replicas lost 0
signal_servers KILL 1 0 1 1
wait_pid "$LAUNCHER" 200
show "$WORK/lost.err"
[[ $WAIT_STATUS != timeout && $WAIT_STATUS != 124 ]] || fail "the run hung after part 1 was lost"
[[ $WAIT_STATUS != 0 ]] || fail "the run succeeded without any server of part 1"
# Whoever notices first says so: a trainer's failed fetch, or the launcher watching the servers.
grep -Eq "^\[trainer [01]\] graphshard-trainer: error: .*part 1|^\[launch\] part 1 has no live server left" \
  "$WORK/lost.err" || fail "neither a trainer's error nor the launcher names part 1"
grep -Eq "Segmentation|core dumped|terminate called" "$WORK/lost.err" &&
  fail "a process crashed instead of failing with an error"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "part 1 lost: the run stopped, naming it"
