#!/usr/bin/env bash
# The GPU sampler's start-up read (topology_read_bench.cc): a generated graph
# (graphshard-partition generate $GEN_ARGS) in PARTS random parts, one server each
# on this host, its whole topology read through SampleOneHop with one call in flight per part
# (the baseline) and with IN_FLIGHT calls, in the same run. JSON lines on stdout and in
# $OUT/results.jsonl. Compare edges_per_s across two sizes (e.g. GEN_ARGS "--kind papers
# --scale 0.1" against the default): the read must stay linear in the edges (an exact reserve
# per call once made it quadratic: 86.5 s instead of 5.15 s at scale 0.1; RESULTS.md).
#
# Knobs: BIN_DIR (build/bin), GEN_ARGS ("--kind papers --scale 0.02": 2.2 M nodes, ~65 M
# directed edges, made in seconds by all cores; "--kind products --scale full" makes the
# products-shaped graph but on one thread: over 6 minutes on 16 cores), PARTS (2), IN_FLIGHT ("1,4,8"; the first is the
# baseline), PER_CALL (16384), ROUNDS (2), PARTITION (an existing partition of PARTS parts, e.g.
# papers_bench.sh's; then nothing is generated), WORK, OUT.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN_DIR=${BIN_DIR:-$ROOT/build/bin}
GEN_ARGS=${GEN_ARGS:---kind papers --scale 0.02}
PARTS=${PARTS:-2}
IN_FLIGHT=${IN_FLIGHT:-1,4,8}
PER_CALL=${PER_CALL:-16384}
ROUNDS=${ROUNDS:-2}
WORK=${WORK:-$(mktemp -d /tmp/gs-topology-read.XXXXXX)}
OUT=${OUT:-$WORK/out}
mkdir -p "$WORK" "$OUT"
log() { echo "[topology-read-bench +${SECONDS}s] $*" >&2; }
pids=()
stop_servers() {
  ((${#pids[@]})) && kill -TERM "${pids[@]}" 2>/dev/null || true
  for p in "${pids[@]}"; do timeout 20 tail --pid="$p" -f /dev/null || kill -KILL "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_servers; [[ -n ${PARTITION:-} ]] || rm -rf "$WORK/parts" "$WORK/input"' EXIT
for b in graphshard-partition graphshard-server topology_read_bench; do
  [[ -x $BIN_DIR/$b ]] || { echo "topology_read_bench.sh: $BIN_DIR/$b not built" >&2; exit 1; }
done

if [[ -z ${PARTITION:-} ]]; then
  log "generating a graph ($GEN_ARGS), $PARTS random parts"
  # shellcheck disable=SC2086
  "$BIN_DIR/graphshard-partition" generate --seed 1 $GEN_ARGS \
    --out "$WORK/input" >"$OUT/generate.log" 2>&1
  "$BIN_DIR/graphshard-partition" partition --input "$WORK/input" --parts "$PARTS" \
    --method random --seed 1 --out "$WORK/parts" >"$OUT/partition.log" 2>&1
fi
PARTITION=${PARTITION:-$WORK/parts}

servers=()
for ((k = 0; k < PARTS; k++)); do
  "$BIN_DIR/graphshard-server" --partition "$PARTITION" --part "$k" --listen 127.0.0.1:0 \
    --registry "$WORK/registry" >"$OUT/server_$k.log" 2>&1 &
  pids+=($!)
done
for ((k = 0; k < PARTS; k++)); do
  for _ in $(seq 600); do [[ -s $WORK/registry/part_$k ]] && break; sleep 0.1; done
  [[ -s $WORK/registry/part_$k ]] || { cat "$OUT/server_$k.log" >&2; exit 1; }
  servers+=("$(cat "$WORK/registry/part_$k")")
done
log "servers up; reading with ${IN_FLIGHT} calls in flight, $ROUNDS rounds"
"$BIN_DIR/topology_read_bench" --servers "$(IFS=,; echo "${servers[*]}")" \
  --in-flight "$IN_FLIGHT" --per-call "$PER_CALL" --rounds "$ROUNDS" |
  tee -a "$OUT/results.jsonl"
