#!/usr/bin/env bash
# Bulk transport benchmark: the bulk transport against raw TCP loopback (one stream, same run) and
# against the gRPC peer path, on the GPU machine's CPUs (no GPU needed). Builds transport_bench
# (no Torch), reuses (or generates and partitions in 2) the ogbn-products-shaped graph of
# device_cross_host_bench.sh, then runs tests/bench/transport_bench.cc once per answer size in
# PAYLOADS_MIB: raw TCP loopback, the transport's request/response with answers of that size at
# IN_FLIGHT requests in flight; with the first size also GatherFeatures of ROWS rows through
# GrpcPeers and BulkPeers against two real servers, whole and in pieces of PIECE_MIB MiB
# (engine::SplitGathers, the servers' default).
# Knobs: PAYLOADS_MIB ("16 64"; from 64 MiB on an answer arrives in fresh pages), REPS (20),
#   IN_FLIGHT (1,4,8), ROWS (200000; several: "100000 200000", one peer run each), PIECE_MIB
#   (4,8,16), SMALL=1 (a generated graph of SMALL_NODES nodes, default 200000, random parts:
#   part 1 holds about half of them), BUILD_DIR (build-dev;
#   SKIP_BUILD=1 uses it), BENCH_DATA (/tmp/gsdata).
# Results: JSON lines in $OUT/transport.jsonl; logs in $OUT.
#   device: source .devdeps/use-deps.sh .devdeps && tests/bench/device_transport_bench.sh
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
J=$(nproc)
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/steps.log" >&2; }
log "cores $J; $(grep -m1 'model name' /proc/cpuinfo)"
B_DIR=${BUILD_DIR:-build-dev}
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  rm -f "$B_DIR/CMakeCache.txt"
  # shellcheck disable=SC2086  # DEVICE_CMAKE_ARGS: several arguments
  cmake -S . -B "$B_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHSHARD_BUILD_TRAINER=OFF \
    ${DEVICE_CMAKE_ARGS:-} >"$OUT/cmake.log" 2>&1
  cmake --build "$B_DIR" --target graphshard-partition transport_bench -j"$J" >"$OUT/build.log" 2>&1
  log "built"
fi
BIN=$(readlink -f "$B_DIR/bin")
D=${BENCH_DATA:-/tmp/gsdata}
mkdir -p "$D"
if [[ ${SMALL:-0} == 1 ]]; then
  SMALL_NODES=${SMALL_NODES:-200000}
  GRAPH=$D/graph_small_$SMALL_NODES P2=$D/p2_small_$SMALL_NODES
  if [[ ! -s $P2/graphshard.json ]]; then
    "$BIN/graphshard-partition" generate --kind products --seed 1 --num-nodes "$SMALL_NODES" \
      --avg-degree 20 --num-features 100 --out "$GRAPH" >"$OUT/gen.log" 2>&1
    "$BIN/graphshard-partition" partition --input "$GRAPH" --parts 2 --method random --seed 0 \
      --out "$P2" >"$OUT/partition.log" 2>&1
  fi
else
  GRAPH=$D/graph P2=$D/p2
  if [[ ! -s $P2/graphshard.json ]]; then
    [[ -s $GRAPH/edge_index.npy ]] ||
      python3 tests/bench/gen_products_like.py --out "$GRAPH" --threads 8 >"$OUT/gen.log" 2>&1
    "$BIN/graphshard-partition" partition --input "$GRAPH" --parts 2 --method metis --seed 0 \
      --out "$P2" >"$OUT/partition.log" 2>&1
  fi
fi
log "partition $P2"
set -x
: >"$OUT/transport.jsonl"
for mib in ${PAYLOADS_MIB:-16 64}; do
  timeout 1200 "$BIN/transport_bench" --payload-mib "$mib" --reps "${REPS:-20}" \
    --in-flight "${IN_FLIGHT:-1,4,8}" 2>>"$OUT/transport.err" |
    sed "s/^{/{\"payload_mib\": $mib, /" | tee -a "$OUT/transport.jsonl"
done
for rows in ${ROWS:-200000}; do
  timeout 1200 "$BIN/transport_bench" --payload-mib 16 --reps "${REPS:-20}" --in-flight 1 \
    --partition "$P2" --rows "$rows" --piece-mib "${PIECE_MIB:-4,8,16}" 2>>"$OUT/transport.err" |
    sed "s/^{/{\"peer_rows\": $rows, /" | tee -a "$OUT/transport.jsonl"
done
{ set +x; } 2>/dev/null
log "done: $OUT/transport.jsonl"
