#!/usr/bin/env bash
# Two "hosts" on this machine: network namespaces gsA and gsB joined by a veth pair (10.77.0.1/24
# and 10.77.0.2/24), both directions capped with `tc ... tbf` (this kernel has no netem: no
# latency shaping). Each host runs its share of one job with the per-node launcher
# (deploy/graphshard-launch --num-nodes 2 --node-rank R --master-addr 10.77.0.1): one server
# (listening on its own 10.x address, published in a shared registry folder) and CPU trainers.
# The namespaces count as two hosts (shm::HostId includes the network namespace).
#  1. The job, 2 trainers per host: every trainer reads only its own host's server (host-local
#     assignment: the "rank R reads part P ... at ADDR" lines), the two trainers of a host split
#     its part; node 0 prints the JSON summary (test_acc >= 0.80), all 4 ranks end with the same
#     weights, nothing is left running; the servers' peer calls went over the bulk transport
#     (--peer-transport bulk: each names the other's bulk address and counts its requests).
#  1b. The same job with the tiered feature store (--feature-store device, no device tier):
#     each trainer's host tier holds its host's part and the other host's rows come per batch
#     through its own server and the bulk transport (--host-cache-mib 0); then the default
#     host cache, with room for all of them, takes the network off the batches. The weights equal job 1's bit for bit; the
#     summary counts the rows of each tier. The first runs its launchers with no `ip` on PATH:
#     they find Gloo's interface through python3.
#  2. A host with a trainer but no server (both servers in A, rank 1 in B): both trainers exit 1
#     at start naming that host and rank, without waiting for a timeout.
#  3. The link is cut mid-training (`ip link set ... down`, 1 trainer per host): both launchers
#     exit non-zero within the deadlines given (RPC 10 s, collectives 20 s, +teardown), their
#     stderr names the unreachable peer (its 10.77.0.x address or part), and no process is left
#     behind.
# Namespaces are always deleted at exit. Needs root and iproute2 (ip, tc).
# shellcheck source=tests/deploy/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_root "it creates network namespaces" netns
watchdog 420
need_tools ip tc python3
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer

# Names unique to this run; the addresses exist only inside these namespaces.
tag=$$
nsA=gs$tag-A nsB=gs$tag-B
addrA=10.77.0.1 addrB=10.77.0.2
ifA=gsvA ifB=gsvB
rate=${GRAPHSHARD_NETNS_RATE:-200mbit}

remove_namespaces() {
  local pids
  # Processes first: a namespace lives on while a process is inside it.
  pids=$(procs_in_work)
  # shellcheck disable=SC2086
  [[ -z $pids ]] || kill -KILL $pids 2>/dev/null
  ip netns del "$nsA" 2>/dev/null
  ip netns del "$nsB" 2>/dev/null
}
at_exit remove_namespaces
ip netns add "$nsA" || fail "ip netns add (needs CAP_SYS_ADMIN)"
ip netns add "$nsB" || fail "ip netns add $nsB"
ip link add "$ifA" netns "$nsA" type veth peer name "$ifB" netns "$nsB" ||
  fail "cannot create a veth pair between the namespaces"
for side in "A $nsA $ifA $addrA" "B $nsB $ifB $addrB"; do
  read -r _ ns dev addr <<<"$side"
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$addr/24" dev "$dev"
  ip -n "$ns" link set "$dev" up
  ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst 64kb latency 50ms ||
    fail "tc tbf on $dev"
done
# Reachability: a TCP connect across the link (no ping here), through a one-shot listener.
python3 - "$nsA" "$nsB" "$addrB" <<'PY' || fail "no TCP connectivity between the namespaces"
import subprocess, sys, time
ns_a, ns_b, addr_b = sys.argv[1:]
srv = subprocess.Popen(["ip", "netns", "exec", ns_b, "timeout", "10", "python3", "-c",
    "import socket; s=socket.socket(); s.bind(('%s', 29499)); s.listen(); s.accept()" % addr_b])
for _ in range(50):
    r = subprocess.run(["ip", "netns", "exec", ns_a, "timeout", "2", "python3", "-c",
        "import socket; socket.create_connection(('%s', 29499), 1)" % addr_b],
        stderr=subprocess.DEVNULL)
    if r.returncode == 0:
        break
    time.sleep(0.1)
srv.wait(timeout=10)
sys.exit(r.returncode)
PY
note "namespaces $nsA ($addrA) and $nsB ($addrB), veth capped at $rate"
make_graph "$WORK/p2"

# One job token for both nodes (docs/SECURITY.md): every RPC and bulk connection carries it.
(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$WORK/token")

# start_node RANK NS ADDR NAME [trainer flags]: this node's share (TRAINERS_PER_NODE trainers,
# default 1; NODE_PATH: the launcher's PATH), in the background; sets NODE_PID.
start_node() {
  local rank=$1 ns=$2 addr=$3 name=$4
  shift 4
  ip netns exec "$ns" env PATH="${NODE_PATH:-$PATH}" timeout 240 "$LAUNCH" --num-nodes 2 \
    --node-rank "$rank" \
    --trainers-per-node "${TRAINERS_PER_NODE:-1}" \
    --master-addr "$addrA" --master-port 29500 --listen-host "$addr" \
    --registry "$WORK/registry-$name" --partition "$WORK/p2" --bin-dir "$BIN" \
    --token-file "$WORK/token" --server-wait-s 60 --grace-s 5 --server-arg=--rpc_timeout_s=10 \
    --server-arg=--shutdown_grace_s=5 --server-arg=--peer-transport=bulk -- \
    --seed 1 --rpc-timeout-s 10 --collective-timeout-s 20 --server-wait-s 30 "$@" \
    >"$WORK/$name.$rank.out" 2>"$WORK/$name.$rank.err" &
  NODE_PID=$!
}

# wait_pid PID SECONDS: sets WAIT_STATUS (exit status, or "timeout").
wait_pid() {
  local deadline=$((SECONDS + $2))
  WAIT_STATUS=0
  while kill -0 "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || { WAIT_STATUS=timeout; return 0; }
    sleep 0.1
  done
  wait "$1" || WAIT_STATUS=$?
}

# --- 1. a whole job over the two hosts, 2 trainers each ----------------------------------------
mkdir -p "$WORK/registry-run"
t0=$SECONDS
TRAINERS_PER_NODE=2 start_node 0 "$nsA" "$addrA" run --epochs 5 --eval-every 5
pid0=$NODE_PID
TRAINERS_PER_NODE=2 start_node 1 "$nsB" "$addrB" run --epochs 5 --eval-every 5
pid1=$NODE_PID
wait_pid "$pid0" 200
status0=$WAIT_STATUS
wait_pid "$pid1" 30
status1=$WAIT_STATUS
note "job over 2 namespaces: node 0 status $status0, node 1 status $status1, $((SECONDS - t0)) s"
if [[ $status0 != 0 || $status1 != 0 ]]; then
  for f in "$WORK"/run.*; do show "$f"; done
  fail "the 2-host job failed (node 0: $status0, node 1: $status1)"
fi
show "$WORK/run.0.out"
check_summary "$(tail -n 1 "$WORK/run.0.out")" 0.80 4
grep -q "SERVING: $addrA:[0-9]* $addrB:[0-9]*" "$WORK/run.0.err" ||
  { show "$WORK/run.0.err"; fail "servers did not publish their 10.x addresses"; }
# Host-local: node 0's ranks 0, 1 read part 0 at A (chunks 0, 1 of 2), node 1's ranks 2, 3 part
# 1 at B; nothing else.
for node in "0 $addrA" "1 $addrB"; do
  read -r n addr <<<"$node"
  shares=$(sed -n 's/^\[trainer \([0-9]*\)\] rank [0-9]* reads part \([0-9]*\) (chunk \([0-9]*\) of \([0-9]*\)) at \([0-9.]*\):[0-9]* .*/\1 \2 \3 \4 \5/p' \
    "$WORK/run.$n.err" | sort)
  want=$(printf '%s\n' "$((2 * n)) $n 0 2 $addr" "$((2 * n + 1)) $n 1 2 $addr")
  [[ $shares == "$want" ]] || { show "$WORK/run.$n.err"
    fail "node $n: trainers' shares (rank part chunk chunks address) are '$shares', expected '$want'"; }
done
note "host-local shares: $(grep -h 'reads part' "$WORK"/run.*.err | sed 's/ (host .*//' | tr '\n' ';')"
mapfile -t fps < <(cat "$WORK"/run.*.err |
  sed -n 's/^\[trainer [0-9]*\] rank [0-9]* weights_fingerprint \([0-9a-f]*\)$/\1/p')
(($(printf '%s\n' "${fps[@]}" | sort -u | wc -l) == 1 && ${#fps[@]} == 4)) ||
  fail "expected one weights fingerprint over the 4 ranks, got: ${fps[*]:-none}"
[[ -z $(procs_in_work) ]] || fail "processes left behind after the job"
# Peer traffic crossed the link on the bulk transport (docs/TRANSPORT.md): each server found the
# other's bulk port on its 10.x address and sent requests there. (Errors are not checked: a node
# whose job ends first stops its server while the other may still ask it.)
for node in "0 $addrB" "1 $addrA"; do
  read -r n other <<<"$node"
  grep -q "peer calls over the bulk transport at $other:[0-9]*" "$WORK/run.$n.err" ||
    { show "$WORK/run.$n.err"; fail "node $n's server did not use the bulk transport to $other"; }
  grep -q "sent [1-9][0-9]* bulk requests to peers" "$WORK/run.$n.err" ||
    { show "$WORK/run.$n.err"; fail "node $n's server sent no bulk requests to its peer"; }
done
note "bulk transport: $(grep -h 'bulk requests to peers' "$WORK"/run.*.err | tr '\n' ';')"

# --- 1b. the tiered feature store across the two hosts ----------------------------------------
# The same job with --feature-store device and no device tier (--device-cache-mib 0): each
# trainer keeps its own host's part in the host tier and fetches the other host's rows per batch
# through its host's server (which asks its peer over the bulk transport), with no host cache
# (--host-cache-mib 0); then with the default host cache (auto: a quarter of the available
# memory, room for every row of the other host here): nothing crosses per batch. Same batches,
# same rows: the weights of the job above, bit for bit.
reference=${fps[0]}
# The first of these jobs runs its launchers without iproute2 on PATH (as on hosts without it):
# they find the veth for the trainers' Gloo with python3, or the ranks could not meet.
noip=$WORK/path-without-ip
mkdir -p "$noip"
for f in /usr/local/bin/* /usr/bin/* /usr/sbin/* /bin/* /sbin/*; do
  [[ ${f##*/} == ip || -e $noip/${f##*/} ]] || ln -s "$f" "$noip/${f##*/}"
done
PATH=$noip command -v ip >/dev/null && fail "ip is still on the PATH made without it"
for run in "tier remote --host-cache-mib 0" "tiercache none"; do
  read -r name remote extra <<<"$run"
  node_path=$PATH
  [[ $name == tier ]] && node_path=$noip
  mkdir -p "$WORK/registry-$name"
  # shellcheck disable=SC2086  # extra: flags, or none
  NODE_PATH=$node_path TRAINERS_PER_NODE=2 start_node 0 "$nsA" "$addrA" "$name" --epochs 5 \
    --eval-every 5 --feature-store device --device-cache-mib 0 $extra
  pid0=$NODE_PID
  # shellcheck disable=SC2086
  NODE_PATH=$node_path TRAINERS_PER_NODE=2 start_node 1 "$nsB" "$addrB" "$name" --epochs 5 \
    --eval-every 5 --feature-store device --device-cache-mib 0 $extra
  pid1=$NODE_PID
  wait_pid "$pid0" 200
  status0=$WAIT_STATUS
  wait_pid "$pid1" 30
  status1=$WAIT_STATUS
  if [[ $status0 != 0 || $status1 != 0 ]]; then
    for f in "$WORK/$name".*; do show "$f"; done
    fail "$name: the 2-host job failed (node 0: $status0, node 1: $status1)"
  fi
  mapfile -t got < <(cat "$WORK/$name".*.err |
    sed -n 's/^\[trainer [0-9]*\] rank [0-9]* weights_fingerprint \([0-9a-f]*\)$/\1/p')
  (($(printf '%s\n' "${got[@]}" | sort -u | wc -l) == 1 && ${#got[@]} == 4)) &&
    [[ ${got[0]} == "$reference" ]] ||
    fail "$name: weights ${got[*]:-none}, rows in the batches gave $reference"
  python3 - "$(tail -n 1 "$WORK/$name.0.out")" "$remote" <<'PY' ||
import json, sys
t = json.loads(sys.argv[1])["feature_tiers"]
assert t["device_hit_rate"] == 0 and t["host_hit_rate"] > 0, t
if sys.argv[2] == "remote":
    assert t["remote_hit_rate"] > 0 and t["network_mib"] > 0, t
else:
    assert t["remote_hit_rate"] == 0 and t["network_mib"] == 0 and t["host_hit_rate"] == 1, t
print(f"feature_tiers {t}", file=sys.stderr)
PY
    fail "$name: feature_tiers check failed"
  if [[ $remote == none ]]; then
    grep -q "other hosts' (host cache)" "$WORK/$name.0.err" ||
      { show "$WORK/$name.0.err"; fail "$name: no host cache logged"; }
  fi
  note "$name: $(grep -h 'feature store (' "$WORK/$name.0.err" | sed -n 1p)"
done
[[ -z $(procs_in_work) ]] || fail "processes left behind after the tiered jobs"

# --- 2. a host with a trainer but no part: refused at start on every rank ---------------------
mkdir -p "$WORK/registry-refuse"
for k in 0 1; do
  ip netns exec "$nsA" timeout 60 "$BIN/graphshard-server" --partition "$WORK/p2" --part "$k" \
    --listen "$addrA:0" --registry "$WORK/registry-refuse" >"$WORK/refuse.server$k.err" 2>&1 &
done
t0=$SECONDS
refuse_pids=()
for side in "0 $nsA $ifA" "1 $nsB $ifB"; do
  read -r r ns dev <<<"$side"
  ip netns exec "$ns" env MASTER_ADDR="$addrA" MASTER_PORT=29501 RANK="$r" WORLD_SIZE=2 \
    GLOO_SOCKET_IFNAME="$dev" LOCAL_RANK=0 OMP_NUM_THREADS=1 timeout 60 "$BIN/graphshard-trainer" \
    --registry "$WORK/registry-refuse" --server-wait-s 30 --collective-timeout-s 20 --epochs 1 \
    >"$WORK/refuse.$r.out" 2>"$WORK/refuse.$r.err" &
  refuse_pids+=($!)
done
for r in 0 1; do
  wait_pid "${refuse_pids[r]}" $((r == 0 ? 50 : 10))
  note "trainer without a local part: rank $r status $WAIT_STATUS after $((SECONDS - t0)) s"
  [[ $WAIT_STATUS == 1 ]] || { show "$WORK/refuse.$r.err"; fail "rank $r: status $WAIT_STATUS, expected 1"; }
  grep -q "host-local assignment: host '.*' runs rank 1 but serves no part" "$WORK/refuse.$r.err" ||
    { show "$WORK/refuse.$r.err"; fail "rank $r does not name the host without a part"; }
done
(((SECONDS - t0) < 20)) || fail "the refusal took $((SECONDS - t0)) s (a timeout, not a check)"
pids=$(procs_in_work)
# shellcheck disable=SC2086
[[ -z $pids ]] || kill -TERM $pids
sleep 0.5

# --- 3. cut the link mid-training -------------------------------------------------------------
mkdir -p "$WORK/registry-cut"
start_node 0 "$nsA" "$addrA" cut --epochs 1000
pid0=$NODE_PID
start_node 1 "$nsB" "$addrB" cut --epochs 1000
pid1=$NODE_PID
for ((i = 0; ; i++)); do
  grep -q '^epoch 2 ' "$WORK/cut.0.out" 2>/dev/null && break
  if ((i >= 1200)) || ! kill -0 "$pid0" 2>/dev/null; then
    for f in "$WORK"/cut.*; do show "$f"; done
    fail "the job to cut did not reach epoch 2"
  fi
  sleep 0.1
done
ip -n "$nsA" link set "$ifA" down
t0=$SECONDS
note "link cut ($ifA down)"
# Bound: RPC deadline 10 s, collective 20 s, then teardown (grace 5 s): well under 90 s.
limit=90
wait_pid "$pid0" "$limit"
status0=$WAIT_STATUS
wait_pid "$pid1" $((limit - (SECONDS - t0) > 1 ? limit - (SECONDS - t0) : 1))
status1=$WAIT_STATUS
elapsed=$((SECONDS - t0))
note "after the cut: node 0 status $status0, node 1 status $status1, both gone after $elapsed s"
for f in "$WORK"/cut.*.err; do show "$f"; done
[[ $status0 != timeout && $status1 != timeout ]] || fail "a launcher still ran $limit s after the cut"
((status0 != 0 && status1 != 0)) || fail "after the cut both nodes must fail (node 0: $status0, node 1: $status1)"
# Each node's errors name what it lost: the other host's address, or its part.
# (sed, not head: head's early exit would fail the pipeline with SIGPIPE under pipefail.)
grep -E "$addrB|part 1" "$WORK/cut.0.err" | grep -iE 'error|unavailable|unreachable|deadline|timed? ?out|fail' |
  sed -n 1,3p >&2 || fail "node 0's stderr does not name the unreachable peer ($addrB / part 1)"
grep -E "$addrA|part 0" "$WORK/cut.1.err" | grep -iE 'error|unavailable|unreachable|deadline|timed? ?out|fail' |
  sed -n 1,3p >&2 || fail "node 1's stderr does not name the unreachable peer ($addrA / part 0)"
sleep 0.5
[[ -z $(procs_in_work) ]] || fail "processes left behind after the cut"
note "ok"
