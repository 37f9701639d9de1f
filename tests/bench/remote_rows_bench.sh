#!/usr/bin/env bash
# The tiered feature store's remote tier alone (remote_rows_bench.cc): a products-shaped graph of
# NODES nodes (graphshard-partition generate --kind products) in 2 random parts, 2 servers on
# this host, rows of random ids fetched in batches through the host's servers (shared memory)
# and from their owners, each against memcpy of the same bytes; then the same with the servers'
# peers as on other hosts (--isolated-peers: the rows of the other part cross the bulk transport
# through the 256 MiB hot-row cache). JSON lines on stdout and in $OUT/results.jsonl.
#
# Knobs: BIN_DIR (build/bin), NODES (2449029), ROWS (180000 per batch), BATCHES (20),
# PER_CALL (8192), PARALLEL (calls in flight, comma-separated values each measured: 8), THREADS (servers' --threads, 0 = the default), WORK, OUT.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN_DIR=${BIN_DIR:-$ROOT/build/bin}
NODES=${NODES:-2449029}
ROWS=${ROWS:-180000}
BATCHES=${BATCHES:-20}
PER_CALL=${PER_CALL:-8192}
PARALLEL=${PARALLEL:-8}
THREADS=${THREADS:-0}
WORK=${WORK:-$(mktemp -d /tmp/gs-remote-rows.XXXXXX)}
OUT=${OUT:-$WORK/out}
mkdir -p "$WORK" "$OUT"
log() { echo "[remote-rows-bench +${SECONDS}s] $*" >&2; }
pids=()
stop_servers() {
  ((${#pids[@]})) && kill -TERM "${pids[@]}" 2>/dev/null || true
  for p in "${pids[@]}"; do timeout 20 tail --pid="$p" -f /dev/null || kill -KILL "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_servers; rm -rf "$WORK/parts" "$WORK/input"' EXIT
for b in graphshard-partition graphshard-server remote_rows_bench; do
  [[ -x $BIN_DIR/$b ]] || { echo "remote_rows_bench.sh: $BIN_DIR/$b not built" >&2; exit 1; }
done

log "generating a products-shaped graph of $NODES nodes"
"$BIN_DIR/graphshard-partition" generate --kind products --seed 1 --num-nodes "$NODES" \
  --out "$WORK/input" >"$OUT/generate.log" 2>&1
"$BIN_DIR/graphshard-partition" partition --input "$WORK/input" --parts 2 --method random \
  --seed 1 --out "$WORK/parts" >"$OUT/partition.log" 2>&1

run() {  # run LABEL SERVER_FLAGS...: start 2 servers, run the bench, stop them
  local label=$1
  shift
  rm -rf "$WORK/registry"
  for k in 0 1; do
    "$BIN_DIR/graphshard-server" --partition "$WORK/parts" --part "$k" --listen 127.0.0.1:0 \
      --registry "$WORK/registry" --threads "$THREADS" "$@" >"$OUT/server_${label}_$k.log" 2>&1 &
    pids+=($!)
  done
  for k in 0 1; do
    for _ in $(seq 600); do [[ -s $WORK/registry/part_$k ]] && break; sleep 0.1; done
    [[ -s $WORK/registry/part_$k ]] || { cat "$OUT/server_${label}_$k.log" >&2; exit 1; }
  done
  log "$label: servers up"
  "$BIN_DIR/remote_rows_bench" --servers "$(cat "$WORK/registry/part_0"),$(cat "$WORK/registry/part_1")" \
    --rows "$ROWS" --batches "$BATCHES" --per-call "$PER_CALL" --parallel "$PARALLEL" |
    python3 -c "
import json, sys
for line in sys.stdin:
    r = json.loads(line); r['name'] += '_$label'; print(json.dumps(r), flush=True)" |
    tee -a "$OUT/results.jsonl"
  stop_servers
}
run samehost
run crosshost --isolated-peers --peer-sampling rpc --peer-features rpc
