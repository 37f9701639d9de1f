#!/usr/bin/env bash
# ogbn-papers100M-shaped graph end to end, in one command on the GPU machine, from the
# repository root:
#
#   source .devdeps/use-deps.sh .devdeps && SCALE=0.25 bash tests/bench/papers_bench.sh
#
# 1. builds the binaries (Release, CUDA arch 90; BIN_DIR=... to use built ones);
# 2. `graphshard-partition generate --kind papers --scale $SCALE` (all cores), timed, with its
#    peak RSS;
# 3. `partition --method M` for each M of METHODS (random) into each part count of PARTS, timed,
#    with peak RSS, and `inspect --json` of the result (remote fraction of the edges, balance);
# 4. trains with tests/bench/gpu_train_bench.sh on those partitions (3-layer GraphSAGE-256,
#    fanouts 15,10,5, batch 1024, EPOCHS epochs): CONFIGS as that script names them, by default
#    every row on the GPU (_dev), the tiered store at 10% of the rows on the GPU (_c10) and rows
#    in every batch (no suffix), on 1 GPU and 1 server, on the partition of the first of METHODS
#    (CONFIGS="" skips training).
# Prints JSON lines (papers_generate, papers_partition_<K>, then gpu_train_bench's lines) and
# writes everything under $OUT (default ./papers-bench-out). Disk: the input is ~108 GB x SCALE
# (features 57 GB, edges 52 GB at scale 1) and each partition as much again; WORK (default
# /tmp/gs-papers-bench) must hold both.
# Knobs: SCALE (0.1), PARTS ("1"), METHODS ("random"; e.g. "random stream metis"), PART_ROOT
# (where the partitions of the other methods go, e.g. /dev/shm), CONFIGS, EPOCHS (3), TOTAL_BUDGET seconds (560), WORK, OUT,
# INPUT_ROOT (where the generated input goes, default WORK: e.g. /dev/shm when the disk holds
# only the partitions),
# BIN_DIR, EXTRA_TARGETS (more build targets, word-split), DEVICE (cuda; cpu for a dry run of the plumbing), THREADS (generate/partition
# workers, 0 = all), DROP_INPUT=1 (delete the generated input once partitioned, freeing its
# memory when INPUT_ROOT is /dev/shm). Generation is skipped when every partition asked for
# is already in WORK (a second call on a machine still warm). More knobs of
# gpu_train_bench.sh pass through the environment (SERVER_WAIT_S, TRAINER_EXTRA, RUN_TIMEOUT).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
SCALE=${SCALE:-0.1}
PARTS=${PARTS:-1}
METHODS=${METHODS:-random}
PART_ROOT=${PART_ROOT:-}  # where partitions other than the trained one go (default WORK)
EPOCHS=${EPOCHS:-3}
THREADS=${THREADS:-0}
TOTAL_BUDGET=${TOTAL_BUDGET:-560}
CONFIGS=${CONFIGS-"1gpu_1srv_reg_dev 1gpu_1srv_reg_c10 1gpu_1srv_reg"}
OUT=${OUT:-$ROOT/papers-bench-out}
WORK=${WORK:-/tmp/gs-papers-bench}
BUILD=${BUILD:-$ROOT/build-gpu}
mkdir -p "$OUT" "$WORK"

log() { echo "[papers-bench +$((SECONDS))s] $*" >&2; }
emit() { echo "$1" | tee -a "$OUT/results.jsonl"; }
die() {
  log "$*"
  emit "{\"name\": \"papers_bench\", \"error\": \"$*\"}"
  exit 1
}

log "machine: $(nproc) cores, $(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true) GPU(s); disk at $WORK: $(df -h "$WORK" | tail -1)"

if [[ -z ${BIN_DIR:-} ]]; then
  log "building into $BUILD"
  ZLIB_SO=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null || true)
  [[ -n $ZLIB_SO ]] && DEVICE_CMAKE_ARGS="${DEVICE_CMAKE_ARGS:-} -DZLIB_LIBRARY=$ZLIB_SO"
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${DEVICE_CMAKE_ARGS:-} \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log" >&2; die "cmake configure failed"; }
  # shellcheck disable=SC2086  # EXTRA_TARGETS is a word list
  cmake --build "$BUILD" -j"$(nproc)" --target graphshard-partition graphshard-server \
    graphshard-health graphshard-trainer ${EXTRA_TARGETS:-} >"$OUT/build.log" 2>&1 ||
    { grep -E "error" -A3 "$OUT/build.log" | head -40 >&2; die "build failed"; }
  BIN_DIR=$BUILD/bin
fi

# measured NAME LOG CMD...: runs CMD (stdout and stderr to LOG), prints a JSON line with its
# wall time and peak RSS (the largest of the process and what it waited for).
measured() {
  python3 - "$@" <<'PY'
import json, resource, subprocess, sys, time
name, log, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
t = time.time()
with open(log, "w") as f:
    rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
wall = time.time() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
print(json.dumps({"name": name, "value": round(wall, 1), "unit": "s", "exit": rc,
                  "peak_rss_mib": round(peak), "cores": __import__("os").cpu_count()}))
sys.exit(rc)
PY
}

GRAPH=${INPUT_ROOT:-$WORK}/papers_$SCALE
TRAIN_METHOD=${METHODS%% *}
# part_dir METHOD K: where that partition goes.
part_dir() {
  if [[ $1 != "$TRAIN_METHOD" && -n $PART_ROOT ]]; then echo "$PART_ROOT/p${2}_$1"; else echo "$WORK/p${2}_$1"; fi
}
have_parts=1
for method in $METHODS; do
  for k in $PARTS; do [[ -s $(part_dir "$method" "$k")/graphshard.json ]] || have_parts=0; done
done
if ((have_parts)); then
  log "every partition is there already (WORK=$WORK): no generation"
elif [[ ! -s $GRAPH/edge_index.npy ]]; then
  log "generating papers at scale $SCALE into $GRAPH"
  line=$(measured papers_generate "$OUT/generate.log" "$BIN_DIR/graphshard-partition" generate \
    --kind papers --scale "$SCALE" --seed 1 --threads "$THREADS" --out "$GRAPH") ||
    { tail -5 "$OUT/generate.log" >&2; die "generate failed"; }
  shape=$(grep '^{' "$OUT/generate.log" | tail -1)
  emit "$(python3 -c "import json,sys; a=json.loads(sys.argv[1]); a['shape']=json.loads(sys.argv[2]); a['scale']=float(sys.argv[3]); print(json.dumps(a))" "$line" "$shape" "$SCALE")"
fi
((have_parts)) || log "graph: $(du -sh "$GRAPH" | cut -f1)"

for method in $METHODS; do
  for k in $PARTS; do
    dir=$(part_dir "$method" "$k")
    [[ -s $dir/graphshard.json ]] && continue
    log "partitioning into $k part(s) with $method"
    line=$(measured "papers_partition_${method}_$k" "$OUT/partition_${method}_$k.log" \
      "$BIN_DIR/graphshard-partition" partition --input "$GRAPH" --parts "$k" --method "$method" \
      --seed 1 --threads "$THREADS" --out "$dir") ||
      { tail -5 "$OUT/partition_${method}_$k.log" >&2; die "partition ($method, $k) failed"; }
    shape=$("$BIN_DIR/graphshard-partition" inspect "$dir" --json --no-verify 2>/dev/null)
    emit "$(python3 -c "
import json, re, sys
a = json.loads(sys.argv[1])
a.update(scale=float(sys.argv[2]), parts=int(sys.argv[3]), method=sys.argv[4])
try:
    i = json.loads(sys.argv[5])
    a.update(remote_fraction=round(i['edge_cut'] / max(i['num_edges'], 1), 4),
             node_balance=round(i['node_balance'], 4), edge_balance=round(i['edge_balance'], 4),
             train_balance=round(i.get('train_balance', 0), 4))
except (ValueError, KeyError):
    pass
# Where the time went, from the progress lines of the tool (WHAT: done (N) in S s).
phases = {}
for l in open(sys.argv[6], errors='replace'):
    m = re.search(r'\] (.*): done \(.*\) in ([0-9.]+) s', l)
    if not m:
        continue
    what = m.group(1)
    key = ('stream_counts_s' if 'neighbour counts' in what else
           'stream_walk_s' if what.startswith('stream:') else
           'nodes_s' if re.match(r'part \d+/\d+ nodes', what) else
           'edges_s' if re.match(r'part \d+/\d+ edges', what) else 'other_s')
    phases[key] = round(phases.get(key, 0) + float(m.group(2)), 1)
    if key == 'stream_walk_s':
        phases['stream_passes'] = phases.get('stream_passes', 0) + 1
a['phases'] = phases
print(json.dumps(a))" "$line" "$SCALE" "$k" "$method" "$shape" "$OUT/partition_${method}_$k.log")"
    log "partition: $(du -sh "$dir" | cut -f1); disk left: $(df -h "$dir" | tail -1 | awk '{print $4}')"
  done
done
if [[ ${DROP_INPUT:-0} == 1 && -d $GRAPH ]]; then
  # The input is not needed once partitioned: at F = 1 it is ~108 GB of memory in /dev/shm
  # that the servers' part files want as page cache.
  log "DROP_INPUT=1: removing $GRAPH"
  rm -rf "$GRAPH"
fi
log "memory: $(free -g | awk '/^Mem/ {print $3 " GB used, " $7 " GB available"}')"
[[ -n $CONFIGS ]] || { log "CONFIGS empty: no training"; exit 0; }

left=$((TOTAL_BUDGET - SECONDS))
((left > 90)) || die "no time left to train (${left}s of TOTAL_BUDGET)"
log "training: $CONFIGS (${left}s left)"
GRAPH_DIR=$GRAPH BIN_DIR=$BIN_DIR WORK=$WORK OUT=$OUT EPOCHS=$EPOCHS CONFIGS=$CONFIGS \
  TOTAL_BUDGET=$left METHOD=$TRAIN_METHOD bash tests/bench/gpu_train_bench.sh
