#!/usr/bin/env bash
# Load benchmark: 16 streaming clients for 60 s against 2 real
# graphshard-server processes on this host; prints load_bench's JSON lines (per-batch latency
# p50/p99, throughput, the servers' RSS samples and slope: tests/bench/load_bench.cc).
#
#   tests/bench/load_bench.sh                      # after deploy/build.sh (build/bin)
#   BIN_DIR=... GRAPH=cora|products CLIENTS=16 SECONDS_=60 tests/bench/load_bench.sh
#
# GRAPH=products (default) generates a products-like graph of NODES (default 100000) nodes
# (graphshard-partition generate, seed 1); GRAPH=cora uses tests/data/cora. Either is split into
# 2 random parts. Extra arguments go to load_bench (e.g. --batch-size 1024 --fanouts 15,10,5).
# Results also go to $OUT/results.jsonl (default ./load-bench-out). Not a test: nothing here
# passes or fails on a figure; a stream error or a server that dies makes it exit 1.
#
# ATTACK=1: the same load twice, first alone, then next to an attacker mix without the token:
# ATTACKERS (default 200) connections to each listening port of each server (bulk and gRPC) that
# each send 3 bytes and stall (reopened as the server closes them), and OVERSIZED (default 4) threads sending requests whose answer no message can carry
# (load_bench --oversized-clients). Prints load_under_attack_ratio: the honest throughput under
# attack over the one alone (target >= 0.9, and no stream error).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN_DIR=${BIN_DIR:-$ROOT/build/bin}
OUT=${OUT:-$ROOT/load-bench-out}
GRAPH=${GRAPH:-products}
NODES=${NODES:-100000}
CLIENTS=${CLIENTS:-16}
SECONDS_=${SECONDS_:-60}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-load-bench.XXXXXX")
mkdir -p "$OUT"
log() { echo "[load-bench +${SECONDS}s] $*" >&2; }
pids=()
cleanup() {
  local status=$?
  ((${#pids[@]})) && kill -TERM "${pids[@]}" 2>/dev/null || true
  for p in "${pids[@]}"; do timeout 20 tail --pid="$p" -f /dev/null || kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
for b in graphshard-partition graphshard-server load_bench; do
  [[ -x $BIN_DIR/$b ]] || { echo "load_bench.sh: $BIN_DIR/$b not built" >&2; exit 1; }
done

input=$ROOT/tests/data/cora
undirected=(--undirected)
if [[ $GRAPH == products ]]; then
  log "generating a products-like graph of $NODES nodes"
  timeout 600 "$BIN_DIR/graphshard-partition" generate --kind products --seed 1 \
    --num-nodes "$NODES" --out "$WORK/input" >"$OUT/generate.log" 2>&1
  input=$WORK/input
  undirected=()
fi
timeout 600 "$BIN_DIR/graphshard-partition" partition --input "$input" --parts 2 --method random \
  "${undirected[@]}" --seed 1 --out "$WORK/parts" >"$OUT/partition.log" 2>&1

for k in 0 1; do
  "$BIN_DIR/graphshard-server" --partition "$WORK/parts" --part "$k" --listen 127.0.0.1:0 \
    --registry "$WORK/registry" >"$OUT/server_$k.log" 2>&1 &
  pids+=($!)
done
for k in 0 1; do
  for _ in $(seq 600); do [[ -s $WORK/registry/part_$k ]] && break; sleep 0.1; done
  [[ -s $WORK/registry/part_$k ]] || { cat "$OUT/server_$k.log" >&2; echo "server $k did not register" >&2; exit 1; }
done
servers="$(cat "$WORK/registry/part_0"),$(cat "$WORK/registry/part_1")"
log "servers $servers (pids ${pids[*]}); $CLIENTS clients for $SECONDS_ s"
status=0
run_load() {  # run_load OUTFILE EXTRA...: one load_bench run, its JSON lines in OUTFILE too
  local out=$1
  shift
  timeout $((SECONDS_ + 300)) "$BIN_DIR/load_bench" --servers "$servers" \
    --server-pids "${pids[0]},${pids[1]}" --clients "$CLIENTS" --seconds "$SECONDS_" "$@" \
    | tee -a "$OUT/results.jsonl" "$out"
}
run_load "$WORK/alone.jsonl" "$@" || status=$?
if [[ ${ATTACK:-0} == 1 ]]; then
  # The servers' bulk ports: their listening ports other than the published gRPC ones.
  ports=()
  # From /proc (the servers' socket inodes, and which of them listen): no ss needed.
  while read -r port; do ports+=("$port"); done < <(python3 - "${pids[@]}" <<'PY'
import os, sys
inodes = set()
for pid in sys.argv[1:]:
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    if not os.path.exists(table):
        continue
    for line in open(table).readlines()[1:]:
        f = line.split()
        if f[3] == "0A" and f[9] in inodes:  # LISTEN
            print(int(f[1].rsplit(":", 1)[1], 16))
PY
)
  ((${#ports[@]})) || { echo "load_bench.sh: found no listening port of the servers" >&2; exit 1; }
  log "attacking ports ${ports[*]} (${ATTACKERS:-200} stalled connections each), ${OVERSIZED:-4} oversized-request threads"
  python3 - "${ATTACKERS:-200}" "$((SECONDS_ + 5))" "${ports[@]}" >"$OUT/attacker.log" 2>&1 <<'PY' &
import select, socket, sys, time
per_port, seconds, ports = int(sys.argv[1]), float(sys.argv[2]), [int(p) for p in sys.argv[3:]]
held, opened, refused = {}, 0, 0
end = time.time() + seconds
while time.time() < end:
    for port in ports:
        socks = held.setdefault(port, [])
        alive = []
        for s in socks:  # drop the ones the server closed
            r, _, _ = select.select([s], [], [], 0)
            if r:
                try:
                    if s.recv(1, socket.MSG_PEEK) == b"":
                        s.close(); continue
                except OSError:
                    s.close(); continue
            alive.append(s)
        while len(alive) < per_port:
            s = socket.socket()
            try:
                s.connect(("127.0.0.1", port))
                s.send(b"\x01\x02\x03")
            except OSError:
                refused += 1
                s.close()
                break
            opened += 1
            alive.append(s)
        held[port] = alive
    time.sleep(0.2)
print(f"attacker: opened {opened} connections, {refused} refused")
PY
  attacker=$!
  run_load "$WORK/attacked.jsonl" --oversized-clients "${OVERSIZED:-4}" "$@" || status=$?
  wait "$attacker" || true
  cat "$OUT/attacker.log" >&2
  python3 - "$WORK/alone.jsonl" "$WORK/attacked.jsonl" <<'PY' | tee -a "$OUT/results.jsonl"
import json, sys
def throughput(path):
    for line in open(path):
        r = json.loads(line)
        if r["name"] == "load_throughput":
            return r
alone, attacked = throughput(sys.argv[1]), throughput(sys.argv[2])
print(json.dumps({"name": "load_under_attack_ratio",
                  "value": round(attacked["value"] / alone["value"], 3), "unit": "x",
                  "baseline_batches_per_s": alone["value"],
                  "under_attack_batches_per_s": attacked["value"],
                  "stream_errors_under_attack": attacked["stream_errors"]}))
PY
fi
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "load_bench.sh: server $p died (see $OUT/server_*.log)" >&2; status=1; }
done
exit "$status"
