#!/usr/bin/env bash
# deploy/graphshard-launch against the fake binaries in fakes/ (same command-line contract as
# the real ones, failures on request): output routing, exit statuses, teardown on every failure
# path, no process or temporary folder left behind. Runs in seconds; needs no build.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
FAKES=$SRC/tests/e2e/fakes
mkdir -p "$WORK/part" "$WORK/tmp"
echo '{"format_version": 1, "num_parts": 2}' >"$WORK/part/graphshard.json"

# launch NAME [env VAR=... --] ARGS...: runs the launcher on the fake partition; sets STATUS,
# ELAPSED; output in $WORK/NAME.{out,err}.
launch() {
  local name=$1
  shift
  local envs=()
  if [[ ${1:-} == env ]]; then
    shift
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
  fi
  local start=$SECONDS
  STATUS=0
  env TMPDIR="$WORK/tmp" "${envs[@]}" timeout 60 "$LAUNCH" --partition "$WORK/part" \
    --bin-dir "$FAKES" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || STATUS=$?
  ELAPSED=$((SECONDS - start))
  note "$name: status $STATUS in ${ELAPSED}s"
  ((STATUS != 124)) || { show "$WORK/$name.err"; fail "$name: launcher hung"; }
  no_leftovers "$name"
}

no_leftovers() {
  local left
  # Only this test's processes (their flags name $WORK): another copy of the suite may be running.
  left=$(pgrep -f -- "$FAKES/graphshard-.*$WORK/" || true)
  [[ -z $left ]] || { show "$WORK/$1.err"; fail "$1: left running: $(ps -o args= -p "${left//$'\n'/,}")"; }
  [[ -z $(ls -A "$WORK/tmp") ]] || fail "$1: launcher left $(ls "$WORK/tmp") in TMPDIR"
}

expect_status() { # NAME WANT
  ((STATUS == $2)) || { show "$WORK/$1.err"; fail "$1: status $STATUS, expected $2"; }
}

# 1. Normal run, M > K: rank 0's stdout as is with the bare JSON last; the rest prefixed.
launch ok --trainers 3 --registry "$WORK/registry" --epochs 2
expect_status ok 0
[[ $(tail -n 1 "$WORK/ok.out") == '{"test_acc": 0.8'* ]] || fail "ok: last stdout line not bare JSON"
(($(grep -c '^epoch ' "$WORK/ok.out") == 2)) || fail "ok: epoch lines missing from stdout"
for label in "server 0" "server 1" "trainer 1" "trainer 2"; do
  grep -q "^\[$label\] " "$WORK/ok.err" || fail "ok: no [$label] lines on stderr"
done
grep -q '^\[trainer 2\] rank 2 weights_fingerprint' "$WORK/ok.err" || fail "ok: rank 2 output lost"
! grep -q 'weights_fingerprint' "$WORK/ok.out" || fail "ok: stderr leaked into stdout"
! compgen -G "$WORK/registry/part_*" >/dev/null || fail "ok: registry entries left behind"

# 2. A trainer fails while the other waits in a collective: its status, everything stopped.
launch trainer_fails --trainers 2 --fail-rank 1
expect_status trainer_fails 3
grep -q 'trainer 1 exited with status 3' "$WORK/trainer_fails.err" || fail "trainer_fails: no reason"

# 3. ... and a trainer that ignores SIGTERM is killed after the grace period.
launch trainer_ignores_term --trainers 2 --fail-rank 1 --ignore-term --grace-s 1
expect_status trainer_ignores_term 3
grep -q 'ignored SIGTERM' "$WORK/trainer_ignores_term.err" || fail "trainer_ignores_term: no SIGKILL"

# 3b. --restarts: the training group starts again (with --resume after a --checkpoint-dir) and
# finishes; without restarts left, the failure stands.
launch trainer_restarts --trainers 2 --fail-rank 1 --fail-once --restarts 1 --checkpoint-dir /x
expect_status trainer_restarts 0
grep -q 'restarting the training group (restart 1 of 1) from its last checkpoint' \
  "$WORK/trainer_restarts.err" || fail "trainer_restarts: no restart reported"
(($(grep -c 'resuming' "$WORK/trainer_restarts.err") == 2)) ||
  fail "trainer_restarts: the restarted trainers were not given --resume"
launch trainer_restarts_used_up --trainers 2 --fail-rank 1 --restarts 1
expect_status trainer_restarts_used_up 3
grep -q 'from the start: no --checkpoint-dir' "$WORK/trainer_restarts_used_up.err" ||
  fail "trainer_restarts_used_up: no restart reported"

# 4. A server that cannot load its part: fail at once, with the server's message.
launch server_load_error env FAKE_SERVER_FAIL_PART=1 -- --server-wait-s 50
expect_status server_load_error 1
((ELAPSED < 10)) || fail "server_load_error: took ${ELAPSED}s"
grep -q '^\[server 1\] .*label.npy' "$WORK/server_load_error.err" || fail "server_load_error: message lost"

# 5. A server that dies while the trainers run.
launch server_dies env FAKE_SERVER_DIE_PART=0 -- --epochs 1000
expect_status server_dies 1
grep -q 'server 0 exited with status 3 while trainers ran' "$WORK/server_dies.err" ||
  fail "server_dies: no reason"

# 5b. With --replicas 2, the death of one replica is reported and the job goes on; with
# --server-restarts the replica is started again (and registers again).
launch replica_dies env FAKE_SERVER_DIE_PART=0.1 -- --replicas 2 --epochs 20
expect_status replica_dies 0
grep -q 'server 0.1 exited with status 3 while trainers ran (part 0, replica 1, .*part 0 has 1 other live server' \
  "$WORK/replica_dies.err" || { show "$WORK/replica_dies.err"; fail "replica_dies: loss not reported"; }
launch replica_restarts env FAKE_SERVER_DIE_PART=0.1 -- --replicas 2 --server-restarts 1 --epochs 20
expect_status replica_restarts 0
grep -q 'restarting part 0 replica 1 (restart 1 of 1)' "$WORK/replica_restarts.err" ||
  { show "$WORK/replica_restarts.err"; fail "replica_restarts: no restart"; }
(($(grep -c '^\[server 0.1\] part 0: serving' "$WORK/replica_restarts.err") == 2)) ||
  { show "$WORK/replica_restarts.err"; fail "replica_restarts: the replica did not serve again"; }

# 6. A server that never registers (a stale entry of an earlier run must not count).
mkdir -p "$WORK/stale" && echo "127.0.0.1:1" >"$WORK/stale/part_0"
launch no_register env FAKE_SERVER_NO_REGISTER=1 -- --registry "$WORK/stale" --server-wait-s 2
expect_status no_register 1
grep -q 'did not register' "$WORK/no_register.err" || fail "no_register: no reason"

# 7. SIGTERM to the launcher alone: 143, everything stopped.
env TMPDIR="$WORK/tmp" timeout 60 "$LAUNCH" --partition "$WORK/part" --bin-dir "$FAKES" \
  --epochs 1000 >"$WORK/sigterm.out" 2>"$WORK/sigterm.err" &
timeout_pid=$!
wait_for_file "$WORK/sigterm.out" 30 || fail "sigterm: trainers never started"
launcher=$(pgrep -P "$timeout_pid")
kill -TERM "$launcher"
wait_pid "$timeout_pid" 30
STATUS=$WAIT_STATUS
note "sigterm: status $STATUS"
expect_status sigterm 143
no_leftovers sigterm

# 8. Usage errors.
launch no_partition_servers_mismatch --servers 3
expect_status no_partition_servers_mismatch 2
# More nodes than parts: node 2 of 3 would have trainers and no host-local server.
launch node_without_part --num-nodes 3 --node-rank 2 --master-addr 127.0.0.1 \
  --registry "$WORK/registry-nodes"
expect_status node_without_part 2
grep -q "node 2 would serve no part" "$WORK/node_without_part.err" ||
  { show "$WORK/node_without_part.err"; fail "node_without_part: the refusal does not say why"; }
STATUS=0
timeout 10 "$LAUNCH" --servers 2 >/dev/null 2>&1 || STATUS=$?
expect_status missing_partition 2

# 9. Security (docs/SECURITY.md): by default a fresh job token, mode 0600, reaches every server
# and the health check (the fakes refuse another mode); --no-token and TLS modes; several nodes
# must share one token file.
launch token_default
expect_status token_default 0
grep -q "security: job token .*/token, TLS none" "$WORK/token_default.err" ||
  { show "$WORK/token_default.err"; fail "token_default: no job token announced"; }
launch no_token --no-token
expect_status no_token 0
grep -q "security: no job token" "$WORK/no_token.err" || fail "no_token: not announced"
(umask 022 && echo "0123456789abcdef0123456789abcdef" >"$WORK/open-token")
launch open_token --token-file "$WORK/open-token"
expect_status open_token 1
grep -q "is not 0600" "$WORK/open_token.err" || { show "$WORK/open_token.err"; fail "open_token: why?"; }
launch tls_self_signed --tls self-signed --tls-mutual
expect_status tls_self_signed 0
grep -q "TLS self-signed (mutual)" "$WORK/tls_self_signed.err" || fail "tls_self_signed: not announced"
launch nodes_without_token --num-nodes 2 --node-rank 0 --master-addr 127.0.0.1 \
  --registry "$WORK/registry-token"
expect_status nodes_without_token 2
grep -q "same --token-file" "$WORK/nodes_without_token.err" ||
  { show "$WORK/nodes_without_token.err"; fail "nodes_without_token: the refusal does not say why"; }

# 10. Several nodes: the servers bind this node's own address towards --master-addr
# (deploy/graphshard-node-addr), never 0.0.0.0. Node 1 never comes: the launch fails at the wait.
(umask 077 && echo "0123456789abcdef0123456789abcdef" >"$WORK/node-token")
launch node_address --num-nodes 2 --node-rank 0 --master-addr 127.0.0.1 --server-wait-s 2 \
  --registry "$WORK/registry-addr" --token-file "$WORK/node-token"
expect_status node_address 1
[[ $(cat "$WORK/registry-addr/.listen_0_0") == 127.0.0.1:0 ]] ||
  fail "node_address: server 0 was told to listen on '$(cat "$WORK/registry-addr/.listen_0_0")'"
note ok
