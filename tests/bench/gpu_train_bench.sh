#!/usr/bin/env bash
# GPU training benchmark, in one command on the GPU machine (Ubuntu 24.04, CUDA 13,
# PyTorch 2.11's LibTorch, 16+ cores), from the repository root:
#
#   source .devdeps/use-deps.sh .devdeps && bash tests/bench/gpu_train_bench.sh
#
# Builds the four binaries (Release, CUDA arch 90) while it generates the ogbn-products-shaped
# graph (tests/bench/gen_products_like.py: 2,449,029 nodes, 123.7 M directed edges, 100
# features, 196,615 training seeds), partitions it into 1 and 2 parts (random; METHOD=metis),
# then trains 3-layer GraphSAGE (hidden 256, fanouts 15,10,5, batch 1024) for EPOCHS epochs
# (no evaluation) with:
#   1gpu_1srv  1 trainer (cuda:0), 1 server
#   1gpu_2srv  1 trainer (cuda:0), 2 servers
#   2gpu_2srv  2 trainers (cuda:0, cuda:1; NCCL), 2 servers   -- only if nvidia-smi lists 2+ GPUs
#   1gpu_2srv_f16  as 1gpu_2srv with float16 feature transport (half the bytes on every hop)
#   any <N>gpu_<M>srv[_f16][_reg][_p<P>][_untrimmed|_trimmed][_fp32|_tf32|_bf16]; _reg: --h2d
#     registered (the trainer's default: ring segments registered with CUDA, the GPU copies
#     batches straight out of them); without it --h2d staged (pinned staging copy), so that
#     earlier figures compare; _p<P>: server --prefetch P instead of SERVER_PREFETCH;
#     _untrimmed / _trimmed: --trim off / on (per-layer trimming); _fp32 / _tf32 /
#     _bf16: --precision (matmuls); without them the trainer's defaults; _xhost: the servers
#     reach each other as between hosts (--isolated-peers --peer-sampling rpc --peer-features
#     rpc: every remote hop and row over the network path, the bulk transport by default),
#     _xhostgrpc: the same over gRPC (--peer-transport grpc); trainers stay host-local;
#     _netns: two emulated hosts, network namespaces joined by a veth capped at LINK_GBIT (25)
#     Gbit/s each way (root; tests/bench/netns_lib.sh), server k and half the trainers in
#     namespace k (graphshard-launch --num-nodes 2): the peers, and the tiered store's other
#     host's rows, cross the capped link; 2 servers, an even number of trainers; with a GPU
#     per trainer each namespace sees only its own (CUDA_VISIBLE_DEVICES) and NCCL's
#     all-reduce crosses the veth too (sockets; peer access and shared memory off);
#     _spread / _part (before _xhost): trainer --assignment spread (every trainer reads every
#     server of its host, 1/T of each part's seeds) / part (trainer i of a host reads its part
#     i mod P; the default)
#   without _dev / _auto: trainer --feature-store server (rows in every batch; every figure
#     before the trainer's auto default); _auto: the trainer's default, --feature-store auto
#     (device where the rows fit, reported as "auto: device" / "auto: server")
#   _dev (before _xhost): trainer --feature-store device (every feature row loaded onto each
#     trainer's GPU at start; batches stream as ids and labels, rows gathered on the GPU)
#   _c<PCT> (instead of _dev, before _xhost): the tiered store with its device tier capped at
#     PCT % of the feature rows (--device-cache-mib: PCT % of the table plus the tier's map, 4
#     bytes a node; in figures recorded before a56ef83 the map came out of PCT %: 9.0 % of
#     the rows at 10); the rest of the host's parts in the host tier; _hnone after it:
#     --host-tier none (every row outside the cache fetched by id);
#     _hc<PCT> after that: --host-cache-mib at PCT % of the table (other hosts' hottest rows
#     kept in host memory; with _hnone it stands in for another host's parts on one machine);
#     _howner after that: --remote-rows owner (remote rows asked of their owners, not of the
#     trainer's host's servers). Each
#     such run is compared with the same config's _dev run (gpu_train_tiered_* lines: epoch
#     time over the all-rows run's, and over the rows-in-batches run's where it ran)
#   _link: the same run as link prediction (--task link, --neg-ratio 1, uniform
#     negatives) on the graph partitioned with --edge-split 0.85,0.05,0.10 (seeds_per_s then
#     counts positive training edges per second); with the config without _link in the same
#     CONFIGS, a gpu_train_link_vs_node_<config> line gives link seeds/s over node seeds/s.
#     Link and node classification side by side:
#       CONFIGS="1gpu_2srv_reg 1gpu_2srv_reg_link" bash tests/bench/gpu_train_bench.sh
#   _sh (last): --device-tier shared: the host's GPUs hold one device tier together, each
#     1/G of the rows, reading the others' over peer access (with _dev: the whole table split
#     over the GPUs); compare with the same config without _sh (every row on each GPU)
#   _gs (after _sh): --sampler gpu: each trainer samples its training batches on its GPU from
#     the topology it read at start (needs _dev or _auto); compared with the same config
#     without _gs (the servers sampling) in a gpu_train_gpusampler_* line. _ga instead:
#     --sampler auto (the trainer's default: the GPU where the topology fits), compared alike
#     in a gpu_train_autosampler_* line. _gh and _gd: --sampler gpu with --sampler-topology
#     host (the topology in page-locked host memory, read over PCIe) or device, compared alike
#     in gpu_train_gpuhosttopology_* / gpudevicetopology_* lines. A config without any of them
#     passes --sampler server, so that its figures stay those of the servers sampling.
#   MATRIX=trim_precision: CONFIGS becomes 1gpu_2srv_reg and 2gpu_2srv_reg, each
#     untrimmed and trimmed, each in fp32, tf32 and bf16 (12 runs), and every run is also
#     compared with its GPU count's untrimmed fp32 run (gpu_train_ratio_* lines)
# Prints JSON lines (name, value, unit; the per-run ones also config, epoch_time_s, seeds_per_s,
# data_wait_fraction, step_time_s, allreduce_s, and the input pipeline's stream wait, staging
# and full-queue wait, seconds per epoch and rank; server_cpu_util, the servers' share of the
# machine's cores over the last epoch; server_cpu_s_per_batch, the servers' CPU seconds per
# batch over epochs 2..n-1 (the last epoch below 3 epochs); steady_epoch_time_s, the mean of the epochs between the
# first and the last (the last is flattered by the batches built ahead during the one before:
# use EPOCHS >= 4 and this figure for steady state); peak_gpu_memory_mib, the largest rank's high-water mark
# of tensor memory in the last epoch; time_to_first_batch_s, launch to the first batch, +-0.25 s;
# peak_servers_rss_mib / peak_trainers_rss_mib, all servers' / trainers' resident memory
# together, the servers' with their mapped part files), the 1 -> 2 GPU speedup, and writes everything (logs, metrics
# JSONL, results.jsonl) under $OUT (default ./gpu-bench-out). Times are of the LAST epoch (the
# first one includes CUDA start-up). A run that fails or times out prints a JSON line with
# "error" instead of figures; nothing is estimated.
#
# PROFILE=1 profiles 20 steps of epoch 2 on every rank (the trainer's --profile-dir; EPOCHS >= 3
# keeps them away from the last epoch) and adds the summaries to the line as "profile".
# PROBE=1 runs the shared device tier's probe (GRAPHSHARD_SHARED_TIER_PROBE, trainer/README.md:
# _sh configs) into $OUT/NAME.probe and adds its lines to the line as "shared_tier_probe"
# (gpu, what, rows, ms, gbps; a failed case with "error" instead of ms).
# SHARE_GPU=1 runs configs with more trainers than GPUs, the trainers sharing them over Gloo
# (a stand-in: say so). Knobs (environment): TRAINER_EXTRA (more trainer flags, word-split, e.g. "--backend gloo"),
# SERVER_EXTRA (more server flags, word-split, each passed as --server-arg=FLAG),
# EPOCHS (2), METHOD (random), FEATURE_DTYPE (float32), PREFETCH (auto: the trainer's --prefetch),
# SERVER_PREFETCH (0 = the server's auto default; batches each server stream builds ahead),
# SERVER_THREADS (each server's --threads; 0 = (cores - 2 x trainers) / servers),
# RUN_TIMEOUT seconds per run (200), SERVER_WAIT_S (120: how long the servers may take to load), TOTAL_BUDGET seconds for the whole script (560: a run
# that would start with less than 60 s left is skipped and reported), JOBS (nproc), BUILD (build-gpu), WORK (/tmp/gs-gpu-bench),
# EXTRA_TARGETS (more build targets, e.g. server_bench), GEN_ARGS (extra gen_products_like.py flags, e.g. "--num-nodes 200000 --num-edges 8000000"
# for a quick try), CONFIGS (default "1gpu_1srv 1gpu_2srv 2gpu_2srv 1gpu_2srv_f16"; set but empty:
# build and generate the graph only, for later calls with BIN_DIR). For a dry run of the
# plumbing elsewhere: BIN_DIR (use these binaries, no build), GRAPH_DIR (an existing .npy graph,
# no generation), DEVICE=cpu.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/gpu-bench-out}
WORK=${WORK:-/tmp/gs-gpu-bench}
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
EPOCHS=${EPOCHS:-2}
SERVER_THREADS=${SERVER_THREADS:-0}
METHOD=${METHOD:-random}
FEATURE_DTYPE=${FEATURE_DTYPE:-float32}
PREFETCH=${PREFETCH:-auto}  # the trainer's --prefetch (auto: its default)
SERVER_PREFETCH=${SERVER_PREFETCH:-0}  # 0: the server's default (auto)
RUN_TIMEOUT=${RUN_TIMEOUT:-200}
SERVER_WAIT_S=${SERVER_WAIT_S:-120}  # graphshard-launch --server-wait-s: servers loading (and checking) large parts
GEN_ARGS=${GEN_ARGS:-}
# <N>gpu_<M>srv[_f16]; unset: these four; set but empty: build and generate only (no runs)
CONFIGS=${CONFIGS-"1gpu_1srv 1gpu_2srv 2gpu_2srv 1gpu_2srv_f16"}
MATRIX=${MATRIX:-}
MATRIX_BASES="1gpu_2srv_reg 2gpu_2srv_reg"
case $MATRIX in
  "") ;;
  trim_precision)
    CONFIGS=$(for b in $MATRIX_BASES; do for t in untrimmed trimmed; do
      for p in fp32 tf32 bf16; do echo "${b}_${t}_${p}"; done; done; done) ;;
  *) echo "unknown MATRIX=$MATRIX (known: trim_precision)" >&2; exit 2 ;;
esac
TOTAL_BUDGET=${TOTAL_BUDGET:-560}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT" "$WORK"

if [[ -z ${DEVICE_CMAKE_ARGS:-} && -f .devdeps/use-deps.sh ]]; then
  # shellcheck disable=SC1091
  source .devdeps/use-deps.sh .devdeps
fi

log() { echo "[gpu-bench +$((SECONDS))s] $*" >&2; }
emit() { echo "$1" | tee -a "$OUT/results.jsonl"; }
die() {
  log "$*"
  emit "{\"name\": \"gpu_train_bench\", \"error\": \"$*\"}"
  exit 1
}

CORES=$(nproc)
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
log "machine: $CORES cores, $GPUS GPU(s) ($GPU_NAME)"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true

# 1. Generate the graph in the background while building.
GRAPH=${GRAPH_DIR:-$WORK/products}
# Every partition the configs need already in WORK (e.g. papers_bench.sh made them and dropped
# its input): nothing to generate.
have_parts=1
[[ -n ${CONFIGS// /} ]] || have_parts=0  # build only: make the graph meanwhile, for later calls
for c in $CONFIGS; do
  [[ $c =~ _([0-9]+)srv ]] || continue
  link=""; [[ $c == *_link ]] && link=_link
  [[ -s $WORK/p${BASH_REMATCH[1]}_$METHOD$link/graphshard.json ]] || have_parts=0
done
if ((have_parts)); then
  echo 0 >"$WORK/generate.status"
  GEN_PID=""
elif [[ ! -s $GRAPH/edge_index.npy ]]; then
  log "generating the graph into $GRAPH (background)"
  # shellcheck disable=SC2086
  (python3 tests/bench/gen_products_like.py --out "$GRAPH" --threads 6 $GEN_ARGS \
    >"$OUT/generate.log" 2>&1; echo $? >"$WORK/generate.status") &
  GEN_PID=$!
else
  echo 0 >"$WORK/generate.status"
  GEN_PID=""
fi

# 2. Build only the binaries the runs need.
build() {
  log "configuring $BUILD"
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${DEVICE_CMAKE_ARGS:-} \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$OUT/cmake.log" 2>&1 || { tail -40 "$OUT/cmake.log" >&2; die "cmake configure failed"; }
  grep -E "graphshard trainer" "$OUT/cmake.log" >&2 || true
  log "building with -j$JOBS"
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j"$JOBS" --target graphshard-partition graphshard-server \
    graphshard-health graphshard-trainer ${EXTRA_TARGETS:-} >"$OUT/build.log" 2>&1 ||
    { grep -E "error|Error" -A3 "$OUT/build.log" | head -60 >&2; die "build failed"; }
  log "built"
}
if [[ -n ${BIN_DIR:-} ]]; then
  BIN=$BIN_DIR
else
  build
  BIN=$BUILD/bin
fi

if [[ -n $GEN_PID ]]; then wait "$GEN_PID"; fi
[[ $(cat "$WORK/generate.status") == 0 ]] || { tail -20 "$OUT/generate.log" >&2; die "generate failed"; }
((have_parts)) || log "graph ready: $(du -sh "$GRAPH" | cut -f1)"
if [[ -z ${CONFIGS// /} ]]; then
  log "CONFIGS empty: built and generated; no runs"
  exit 0
fi

# 3. Partition into 1 and 2 parts, concurrently.
partition() {
  local parts=$1 link=${2:-} dir=$WORK/p$1_$METHOD${2:-}
  local split=()
  [[ -n $link ]] && split=(--edge-split 0.85,0.05,0.10)
  if [[ -s $dir/graphshard.json ]]; then return 0; fi
  "$BIN/graphshard-partition" partition --input "$GRAPH" --parts "$parts" --method "$METHOD" \
    --seed 1 "${split[@]}" --out "$dir" >"$OUT/partition_$parts$link.log" 2>&1
}
# The part counts the configs need (NgpuK_Msrv -> M), with edge splits for _link configs.
PARTS=$(for c in $CONFIGS; do [[ $c =~ _([0-9]+)srv && $c != *_link ]] && echo "${BASH_REMATCH[1]}"; done | sort -un)
LINK_PARTS=$(for c in $CONFIGS; do [[ $c =~ _([0-9]+)srv && $c == *_link ]] && echo "${BASH_REMATCH[1]}"; done | sort -un)
log "partitioning ($METHOD) into $(echo $PARTS) parts; with edge splits: $(echo $LINK_PARTS)"
PIDS=()
for k in $PARTS; do
  partition "$k" &
  PIDS+=($!)
done
for k in $LINK_PARTS; do
  partition "$k" _link &
  PIDS+=($!)
done
for pid in "${PIDS[@]}"; do wait "$pid" || die "a partition run failed (see $OUT/partition_*.log)"; done
log "partitioned"

# 4. Runs. The servers share the cores, leaving two per trainer (its training loop, which queues
# the GPU's work, and its input pipeline): a trainer preempted by a server's builders leaves its
# GPU idle.
declare -A EPOCH_TIME=() SEEDS_PER_S=()
# table_mib PARTITION DTYPE: MiB of every node type's feature rows in DTYPE (the manifest's
# feat.npy shapes).
table_mib() {
  python3 - "$1/graphshard.json" "$2" <<'PY'
import json, math, sys
files = json.load(open(sys.argv[1]))["files"]
elem = 4 if sys.argv[2] == "float32" else 2
rows = sum(math.prod(f["shape"]) for p, f in files.items() if p.endswith("/feat.npy"))
print(rows * elem >> 20)
PY
}
# tier_mib PARTITION DTYPE PCT: the --device-cache-mib that holds PCT % of every node type's
# rows: PCT % of the table, plus the tier's map (4 bytes a node; the budget includes it),
# rounded up to whole MiB.
tier_mib() {
  python3 - "$1/graphshard.json" "$2" "$3" <<'PY'
import json, math, sys
files = json.load(open(sys.argv[1]))["files"]
elem = 4 if sys.argv[2] == "float32" else 2
feats = [f["shape"] for p, f in files.items() if p.endswith("/feat.npy")]
want = sum(math.prod(s) for s in feats) * elem * int(sys.argv[3]) // 100 + 4 * sum(s[0] for s in feats)
print(-(-want >> 20))
PY
}
run_config() {
  local name=$1 servers=$2 trainers=$3 dtype=${4:-$FEATURE_DTYPE} h2d=${5:-staged}
  local server_prefetch=${6:-$SERVER_PREFETCH} trim=${7:-} precision=${8:-} peers=${9:-}
  local link=${10:-} assignment=${11:-} store=${12:-} cache_pct=${13:-} host_tier=${14:-}
  local remote_rows=${15:-} host_cache_pct=${16:-} device_tier=${17:-} sampler=${18:-}
  local model_flags=() server_flags=()
  [[ -n $assignment ]] && model_flags+=(--assignment "$assignment")
  case $store in
    "") model_flags+=(--feature-store server) ;;  # as every figure before the auto default
    dev) store=device; model_flags+=(--feature-store device) ;;
    auto) ;;  # the trainer's default (--feature-store auto)
    *) die "unknown feature store $store" ;;
  esac
  if [[ -n $cache_pct ]]; then  # the tiered store, its device tier at cache_pct % of the rows
    store=device model_flags=(--feature-store device
      --device-cache-mib "$(tier_mib "$WORK/p${servers}_$METHOD$link" "$dtype" "$cache_pct")")
    [[ -n $assignment ]] && model_flags+=(--assignment "$assignment")
  fi
  [[ -n $host_tier ]] && model_flags+=(--host-tier "$host_tier")
  [[ -n $device_tier ]] && model_flags+=(--device-tier "$device_tier")
  [[ -n $sampler ]] && model_flags+=(--sampler "${sampler%%:*}")
  [[ $sampler == *:* ]] && model_flags+=(--sampler-topology "${sampler#*:}")
  [[ -n $remote_rows ]] && model_flags+=(--remote-rows "$remote_rows")
  if [[ -n $host_cache_pct ]]; then
    model_flags+=(--host-cache-mib
      $(($(table_mib "$WORK/p${servers}_$METHOD$link" "$dtype") * host_cache_pct / 100)))
  fi
  local a
  for a in ${SERVER_EXTRA:-}; do server_flags+=(--server-arg="$a"); done
  [[ -n $link ]] && model_flags+=(--task link --neg-ratio 1)
  if [[ $peers == _netns ]] && ((servers != 2 || trainers % 2 != 0)); then
    emit "{\"name\": \"gpu_train_$name\", \"error\": \"_netns runs 2 servers and an even number of trainers\"}"
    return 0
  fi
  case $peers in
    _xhost) server_flags+=(--server-arg=--isolated-peers --server-arg=--peer-sampling=rpc
                          --server-arg=--peer-features=rpc) ;;
    _xhostgrpc) server_flags+=(--server-arg=--isolated-peers --server-arg=--peer-sampling=rpc
                              --server-arg=--peer-features=rpc --server-arg=--peer-transport=grpc) ;;
  esac
  [[ -n $trim ]] && model_flags+=(--trim "$trim")
  [[ -n $precision ]] && model_flags+=(--precision "$precision")
  local part_dir=$WORK/p${servers}_$METHOD$link
  local left=$((TOTAL_BUDGET - SECONDS - 10))
  if ((left < 60)); then
    emit "{\"name\": \"gpu_train_$name\", \"error\": \"not run: ${left}s left of TOTAL_BUDGET ${TOTAL_BUDGET}s\"}"
    return 0
  fi
  local limit=$((left < RUN_TIMEOUT ? left : RUN_TIMEOUT))
  local threads=$(((CORES - 2 * trainers) / servers))
  ((SERVER_THREADS > 0)) && threads=$SERVER_THREADS
  ((threads >= 1)) || threads=1
  local metrics=$OUT/$name.metrics.jsonl
  rm -f "$metrics"
  log "run $name: $servers server(s) x $threads threads, $trainers trainer(s)"
  # Server CPU: every 0.25 s, the servers' total CPU ticks and how many epochs have ended.
  local cpu_log=$WORK/$name.server_cpu
  : >"$cpu_log"
  # Every second, also each server thread's ticks by thread name (gs-build, gs-bulk-serve,
  # gs-bulk-io, gs-peer-io, gRPC's own, ...) into $cpu_log.threads.
  : >"$cpu_log.threads"
  : >"$cpu_log.mem"
  local launched
  launched=$(date +%s.%N)
  (
    beat=0
    while sleep 0.25; do
      ticks=0
      now=$(date +%s.%N) epochs=$(grep -c '"event": *"epoch"' "$metrics" 2>/dev/null)
      for pid in $(pgrep -x graphshard-serv); do
        # A server gone meanwhile: skipped (the braces also silence the redirection's error).
        { read -r -a st <"/proc/$pid/stat"; } 2>/dev/null || continue
        ticks=$((ticks + st[13] + st[14]))
        if ((beat % 4 == 0)); then
          for task in /proc/$pid/task/*; do
            # comm may hold spaces: the fields after its closing parenthesis.
            line=$(cat "$task/stat" 2>/dev/null) || continue
            comm=${line#*(}; comm=${comm%)*}; rest=${line##*) }
            read -r -a f <<<"$rest"
            echo "$now $epochs ${comm// /_} $((f[11] + f[12]))"
          done >>"$cpu_log.threads"
        fi
      done
      if ((beat % 4 == 0)); then  # resident memory (KiB, mapped part files included)
        srv=0 trn=0
        for pid in $(pgrep -x graphshard-serv); do
          kib=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null)
          srv=$((srv + ${kib:-0}))
        done
        for pid in $(pgrep -x graphshard-trai); do
          kib=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null)
          trn=$((trn + ${kib:-0}))
        done
        echo "$now $srv $trn" >>"$cpu_log.mem"
      fi
      beat=$((beat + 1))
      echo "$now $epochs $ticks"
    done >>"$cpu_log"
  ) &
  local sampler=$!
  local t0=$SECONDS status=0
  # More trainers than GPUs (SHARE_GPU=1): they share the GPUs, over Gloo (NCCL refuses two
  # ranks on one GPU).
  ((trainers > GPUS)) && [[ $DEVICE == cuda ]] && model_flags+=(--backend gloo)
  local trainer_args=(--device "$DEVICE" --model sage --hidden 256 --fanouts 15,10,5
    --batch-size 1024 --epochs "$EPOCHS" --eval-every 0 --lr 0.003 --dropout 0.5 --seed 1
    --feature-dtype "$dtype" --h2d "$h2d" --prefetch "$PREFETCH" --threads 4
    "${model_flags[@]}" ${TRAINER_EXTRA:-} --metrics-file "$metrics" --progress-every-s 5)
  # PROFILE=1: each rank profiles 20 steps of epoch 2 (trainer --profile-dir); the line carries
  # the summaries as "profile" (one per rank).
  local profile_dir=$OUT/$name.profile
  rm -rf "$profile_dir"
  [[ ${PROFILE:-0} == 1 ]] && trainer_args+=(--profile-dir "$profile_dir")
  local probe_dir=$OUT/$name.probe
  rm -rf "$probe_dir"
  if [[ ${PROBE:-0} == 1 ]]; then
    mkdir -p "$probe_dir"
    export GRAPHSHARD_SHARED_TIER_PROBE=$probe_dir
  else
    unset GRAPHSHARD_SHARED_TIER_PROBE
  fi
  if [[ $peers == _netns ]]; then
    run_netns "$name" "$limit" "$part_dir" "$trainers" "$threads" "$server_prefetch" \
      "${server_flags[@]}" -- "${trainer_args[@]}" || status=$?
  else
    timeout "$limit" deploy/graphshard-launch --partition "$part_dir" --servers "$servers" \
      --trainers "$trainers" --bin-dir "$BIN" --server-wait-s "$SERVER_WAIT_S" \
      --server-arg=--threads=$threads --server-arg=--prefetch=$server_prefetch \
      "${server_flags[@]}" -- "${trainer_args[@]}" \
      >"$OUT/$name.stdout" 2>"$OUT/$name.stderr" || status=$?
  fi
  local wall=$((SECONDS - t0))
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  if ((status != 0)); then
    tail -15 "$OUT/$name.stderr" >&2
    emit "{\"name\": \"gpu_train_$name\", \"error\": \"exit status $status after ${wall}s (124 = timeout after ${limit}s)\", \"gpu\": \"$GPU_NAME\"}"
  fi
  [[ -s $metrics ]] || return 0
  local store_used=${store:-server}
  if [[ $store == auto ]]; then  # what auto chose, from the trainers' log
    store_used="auto: server"
    grep -q "feature store (" "$OUT/$name.stderr" && store_used="auto: device"
  fi
  python3 - "$metrics" "$name" "$servers" "$trainers" "$GPU_NAME" "$CORES" "$wall" \
    "$dtype" "$cpu_log" "$(getconf CLK_TCK)" "$server_prefetch" "${trim:-default}" \
    "${precision:-default}" "${link:+link}" "$store_used" "$profile_dir" "$launched" \
    "$OUT/$name.stderr" >"$WORK/$name.line" <<'PY' || return 0
import glob, json, re, sys
(path, name, servers, trainers, gpu, cores, wall, dtype, cpu_log, hz, server_prefetch, trim,
 precision, task, store, profile_dir, launched, stderr_path) = sys.argv[1:]
profiles = [json.load(open(f)) for f in sorted(glob.glob(profile_dir + "/profile_rank*.json"))]
# The shared tier probe's lines (PROBE=1), from the trainers' log.
probe = []
try:
    log_lines = open(stderr_path, errors="replace").read().splitlines()
except OSError:
    log_lines = []
for line in log_lines:
    m = re.search(r"shared tier probe \(GPU (\d+)\): (.*): (\d+) rows, "
                  r"(?:([0-9.e+-]+) ms, ([0-9.e+-]+) GB/s|failed \((.*)\))$", line)
    if m:
        row = {"gpu": int(m.group(1)), "what": m.group(2), "rows": int(m.group(3))}
        if m.group(6) is None:
            row.update(ms=float(m.group(4)), gbps=float(m.group(5)))
        else:
            row["error"] = m.group(6)
        probe.append(row)
epochs = [r for r in map(json.loads, open(path)) if r.get("event") == "epoch"]
if not epochs:
    sys.exit(1)
last = epochs[-1]
# Servers' CPU over the last epoch: from the first sample after epoch n-1 ended to the first
# after epoch n ended (0.25 s resolution), / wall / cores.
samples = [tuple(map(float, l.split())) for l in open(cpu_log) if len(l.split()) == 3]
n = len(epochs)
start = next((s for s in samples if s[1] >= n - 1), None)
end = next((s for s in samples if s[1] >= n), None)
util = None
if start and end and end[0] > start[0]:
    util = round((end[2] - start[2]) / float(hz) / (end[0] - start[0]) / int(cores), 4)
# Servers' CPU seconds per batch at steady state: their ticks from the sample after epoch 1
# ended to the one after epoch n-1 ended over the batches of epochs 2..n-1, all trainers (each
# epoch's batches are mostly built during the epoch before); the last epoch when n < 3.
cpu_per_batch = None
lo, hi = (1, n - 1) if n >= 3 else (n - 1, n)
a = next((s for s in samples if s[1] >= lo), None)
b = next((s for s in samples if s[1] >= hi), None)
batches = last["steps"] * int(trainers) * (hi - lo)
if a and b and b[0] > a[0] and batches > 0:
    cpu_per_batch = round((b[2] - a[2]) / float(hz) / batches, 4)
# Cores busy per server thread name at steady state (all servers together): the names' summed
# ticks at the sample after epoch 1 ended and at the one after epoch n-1 ended (the last epoch's
# batches were mostly built during the one before); the last epoch when n < 3.
threads = {}
try:
    rows = [l.split() for l in open(cpu_log + ".threads")]
    rows = [(float(r[0]), int(r[1]), r[2], int(r[3])) for r in rows if len(r) == 4]
    times = sorted({r[0] for r in rows})
    lo, hi = (1, n - 1) if n >= 3 else (n - 1, n)
    t0 = next((t for t in times if any(r[0] == t and r[1] >= lo for r in rows)), None)
    t1 = next((t for t in times if any(r[0] == t and r[1] >= hi for r in rows)), None)
    if t0 is not None and t1 is not None and t1 > t0:
        per = {}
        for t in (t0, t1):
            for (tt, _, comm, ticks) in rows:
                if tt == t:
                    per.setdefault(comm, [0, 0])[0 if t == t0 else 1] += ticks
        threads = {c: round((b - a) / float(hz) / (t1 - t0), 2) for c, (a, b) in per.items()
                   if b > a}
except (OSError, ValueError):
    pass
# Time to the first batch: from the launch to the first sample that saw epoch 1 end, less
# epoch 1's own time (servers loading, trainers' stores loading, connecting; +-0.25 s).
first_batch_s = None
first_end = next((s for s in samples if s[1] >= 1), None)
if first_end:
    first_batch_s = round(first_end[0] - float(launched) - epochs[0]["time_s"], 1)
# Peak resident memory of all servers and of all trainers together (1 s samples; the servers'
# includes the pages of their mapped part files).
mem = [tuple(map(float, l.split())) for l in open(cpu_log + ".mem") if len(l.split()) == 3]
peak_server_rss = round(max((m[1] for m in mem), default=0) / 1024)
peak_trainer_rss = round(max((m[2] for m in mem), default=0) / 1024)
print(json.dumps({
    "name": f"gpu_train_{name}", "value": round(last["time_s"], 3), "unit": "s/epoch",
    "config": {"servers": int(servers), "trainers": int(trainers), "gpu": gpu,
               "cores": int(cores), "model": "sage-3x256", "fanouts": [15, 10, 5],
               "batch_size": 1024, "feature_dtype": dtype,
               "server_prefetch": int(server_prefetch), "trim": trim,
               "precision": precision, "task": task or "node",
               "feature_store": store},
    "epoch_time_s": round(last["time_s"], 3),
    "epoch_times_s": [round(r["time_s"], 3) for r in epochs],
    # Steady state: the mean of the epochs between the first (start-up) and the last (which
    # got its first batches built during the epoch before and builds none ahead, so it reads
    # fast by up to prefetch x streams batches); null below 3 epochs.
    "steady_epoch_time_s": (round(sum(r["time_s"] for r in epochs[1:-1]) / (n - 2), 3)
                            if n >= 3 else None),
    "seeds_per_s": round(last["seeds_per_s"], 1),
    "step_time_s": round(last["step_time_s"], 5),
    "data_wait_fraction": round(last["data_wait_fraction"], 4),
    "data_wait_s": round(last["data_wait_s"], 3), "compute_s": round(last["compute_s"], 3),
    "allreduce_s": round(last.get("allreduce_s", 0), 3),
    "pipeline_stream_wait_s": round(last.get("pipeline_stream_wait_s", 0), 3),
    "pipeline_stage_s": round(last.get("pipeline_stage_s", 0), 3),
    "pipeline_full_wait_s": round(last.get("pipeline_full_wait_s", 0), 3),
    "pipeline_h2d_s": round(last.get("pipeline_h2d_s", 0), 3),
    "pipeline_pad_s": round(last.get("pipeline_pad_s", 0), 3),
    "pipeline_gather_s": round(last.get("pipeline_gather_s", 0), 3),
    "server_cpu_util": util,
    "server_cpu_s_per_batch": cpu_per_batch,
    "server_thread_cores": threads,
    "peak_gpu_memory_mib": last.get("peak_gpu_memory_mib"),
    "time_to_first_batch_s": first_batch_s,
    "peak_servers_rss_mib": peak_server_rss, "peak_trainers_rss_mib": peak_trainer_rss,
    "feature_tiers": last.get("feature_tiers"),
    "steps": last["steps"], "run_wall_s": int(wall),
    **({"profile": profiles} if profiles else {}),
    **({"shared_tier_probe": probe} if probe else {})}))
PY
  emit "$(cat "$WORK/$name.line")"
  EPOCH_TIME[$name]=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['epoch_time_s'])" "$WORK/$name.line")
  SEEDS_PER_S[$name]=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['seeds_per_s'])" "$WORK/$name.line")
}

# run_netns NAME LIMIT PART_DIR TRAINERS THREADS PREFETCH [server flags] -- TRAINER ARGS: the
# _netns run: two network namespaces joined by a veth capped at LINK_GBIT Gbit/s each way
# (tests/bench/netns_lib.sh, made at the first such run), node k (namespace k) running server k
# and half the trainers through graphshard-launch --num-nodes 2; node 0's output is NAME.stdout,
# both nodes' logs NAME.stderr. The exit status of the first node that failed.
NETNS_A="" NETNS_B=""
run_netns() {
  local name=$1 limit=$2 part_dir=$3 trainers=$4 threads=$5 prefetch=$6
  shift 6
  local sflags=()
  while [[ $1 != -- ]]; do sflags+=("$1"); shift; done
  shift
  if [[ -z $NETNS_A ]]; then
    # shellcheck source=tests/bench/netns_lib.sh
    source tests/bench/netns_lib.sh
    netns_tools || { log "_netns: ip and tc are missing"; return 1; }
    NETNS_A=gsb$$-A NETNS_B=gsb$$-B
    trap 'netns_down "$NETNS_A" "$NETNS_B"' EXIT
    netns_up "$NETNS_A" "$NETNS_B" gsbA gsbB 10.79.0.1 10.79.0.2 "${LINK_GBIT:-25}" || return 1
    log "namespaces $NETNS_A (10.79.0.1) and $NETNS_B (10.79.0.2), ${LINK_GBIT:-25} Gbit/s each way"
  fi
  local reg=$WORK/$name.registry token=$WORK/netns.token node pids=() status=0 s rc
  rm -rf "$reg" && mkdir -p "$reg"
  (umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$token")
  for node in 0 1; do
    local ns=$NETNS_A addr=10.79.0.1 dev=gsbA
    ((node == 1)) && ns=$NETNS_B addr=10.79.0.2 dev=gsbB
    # The veth for Gloo, named (the launcher finds it by address, with ip or python3). With a
    # GPU per trainer (not SHARE_GPU), node k sees only its own GPUs, and NCCL goes over the
    # veth as between hosts (no NVLink peer access, no shared memory between the nodes).
    local gpu_env=()
    if [[ $DEVICE == cuda && ${SHARE_GPU:-0} != 1 ]] && ((GPUS >= trainers)); then
      local per=$((trainers / 2)) first=$((node * trainers / 2)) ids="" g
      for ((g = first; g < first + per; g++)); do ids+="${ids:+,}$g"; done
      gpu_env=(CUDA_VISIBLE_DEVICES="$ids" NCCL_SOCKET_IFNAME="$dev" NCCL_P2P_DISABLE=1
        NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1)
    fi
    ip netns exec "$ns" env GLOO_SOCKET_IFNAME="$dev" "${gpu_env[@]}" timeout "$limit" \
      deploy/graphshard-launch --num-nodes 2 \
      --node-rank "$node" --trainers-per-node $((trainers / 2)) --master-addr 10.79.0.1 \
      --master-port 29500 --listen-host "$addr" --registry "$reg" --partition "$part_dir" \
      --bin-dir "$BIN" --token-file "$token" --server-wait-s "$SERVER_WAIT_S" \
      --server-arg=--threads=$threads --server-arg=--prefetch=$prefetch "${sflags[@]}" -- "$@" \
      >"$OUT/$name.node$node.stdout" 2>"$OUT/$name.node$node.stderr" &
    pids+=($!)
  done
  for s in "${pids[@]}"; do
    wait "$s"
    rc=$?
    ((rc != 0 && status == 0)) && status=$rc
  done
  cp "$OUT/$name.node0.stdout" "$OUT/$name.stdout"
  cat "$OUT/$name.node0.stderr" "$OUT/$name.node1.stderr" >"$OUT/$name.stderr"
  return "$status"
}

# sampler_of SUFFIX: the --sampler of a config ending in _gs (gpu), _ga (auto) or neither; for
# _gh and _gd, gpu:host and gpu:device (then also --sampler-topology).
sampler_of() {
  case $1 in _gs) echo gpu ;; _ga) echo auto ;; _gh) echo gpu:host ;; _gd) echo gpu:device ;;
  *) echo server ;; esac
}

# Configs: <N>gpu_<M>srv[_f16][_reg][_p<P>]: N trainers (one per GPU), M servers; float16
# transport; --h2d registered (else staged); server --prefetch P (else SERVER_PREFETCH).
for config in $CONFIGS; do
  [[ $config =~ ^([0-9]+)gpu_([0-9]+)srv(_f16)?(_reg)?(_p([0-9]+))?(_untrimmed|_trimmed)?(_fp32|_tf32|_bf16)?(_spread|_part)?(_dev|_auto)?(_c([0-9]+))?(_hnone)?(_hc([0-9]+))?(_howner)?(_xhost|_xhostgrpc|_netns)?(_link)?(_sh)?(_gs|_ga|_gh|_gd)?$ ]] ||
    die "unknown config $config"
  n=${BASH_REMATCH[1]} m=${BASH_REMATCH[2]}
  dtype=$FEATURE_DTYPE h2d=staged server_prefetch=${BASH_REMATCH[6]:-$SERVER_PREFETCH}
  [[ -n ${BASH_REMATCH[3]} ]] && dtype=float16
  [[ -n ${BASH_REMATCH[4]} ]] && h2d=registered
  trim="" precision=${BASH_REMATCH[8]#_}
  case ${BASH_REMATCH[7]} in _untrimmed) trim=off ;; _trimmed) trim=on ;; esac
  if ((n > GPUS)) && [[ $DEVICE == cuda && ${SHARE_GPU:-0} != 1 ]]; then
    emit "{\"name\": \"gpu_train_$config\", \"error\": \"not run: nvidia-smi lists $GPUS GPU(s)\"}"
    continue
  fi
  run_config "$config" "$m" "$n" "$dtype" "$h2d" "$server_prefetch" "$trim" "$precision" \
    "${BASH_REMATCH[17]}" "${BASH_REMATCH[18]}" "${BASH_REMATCH[9]#_}" "${BASH_REMATCH[10]#_}" \
    "${BASH_REMATCH[12]}" "${BASH_REMATCH[13]:+none}" "${BASH_REMATCH[16]:+owner}" \
    "${BASH_REMATCH[15]}" "${BASH_REMATCH[19]:+shared}" "$(sampler_of "${BASH_REMATCH[20]}")"
done

# ratio_line NAME NUMERATOR DENOMINATOR BASELINE: emits {name, value = numerator / denominator
# (3 decimals), unit x, baseline, ratio (the same value)}.
ratio_line() {
  emit "$(python3 -c "
import json, sys
num, den = float(sys.argv[2]), float(sys.argv[3])
print(json.dumps({'name': sys.argv[1], 'value': round(num / den, 3), 'unit': 'x',
                  'baseline': float(sys.argv[4]), 'ratio': round(num / den, 3)}))" "$@")"
}

# The tiered store against every row on the GPU (the same config with _dev) and against rows in
# every batch (the same config without a store suffix), in this run: value = the tiered run's
# epoch time over the all-rows run's (< 1.25 is the 10% target, < 1.1 the 25% one).
for c in $CONFIGS; do
  [[ $c =~ ^(.*)_c[0-9]+(_hnone)?(_hc[0-9]+)?(_howner)?(.*)$ ]] || continue
  all=${BASH_REMATCH[1]}_dev${BASH_REMATCH[5]} rows=${BASH_REMATCH[1]}${BASH_REMATCH[5]}
  [[ -n ${EPOCH_TIME[$c]:-} && -n ${EPOCH_TIME[$all]:-} ]] || continue
  emit "$(python3 -c "
import json, sys
run, all_rows = float(sys.argv[1]), float(sys.argv[2])
server = float(sys.argv[3]) if sys.argv[3] else None
print(json.dumps({'name': 'gpu_train_tiered_' + sys.argv[4] + '_vs_' + sys.argv[5],
                  'value': round(run / all_rows, 3), 'unit': 'x', 'baseline': all_rows,
                  'ratio': round(run / all_rows, 3),
                  'vs_rows_in_batches': round(run / server, 3) if server else None}))" \
    "${EPOCH_TIME[$c]}" "${EPOCH_TIME[$all]}" "${EPOCH_TIME[$rows]:-}" "$c" "$all")"
done

# suffix_ratios SUFFIX WHAT: each config of CONFIGS ending in SUFFIX against the same config
# without it, in this run: a gpu_train_WHAT_<config>_vs_<other> line, value the config's epoch
# time over the other's.
suffix_ratios() {
  local c own
  for c in $CONFIGS; do
    [[ $c == *"$1" ]] || continue
    own=${c%"$1"}
    [[ -n ${EPOCH_TIME[$c]:-} && -n ${EPOCH_TIME[$own]:-} ]] || continue
    ratio_line "gpu_train_$2_${c}_vs_$own" "${EPOCH_TIME[$c]}" "${EPOCH_TIME[$own]}" \
      "${EPOCH_TIME[$own]}"
  done
}
# The shared device tier against a tier per GPU (_sh); the GPU sampler (_gs) and --sampler auto
# (_ga) against the servers sampling (a config with both, e.g. _dev_sh_gs, is compared with its
# _sh run).
suffix_ratios _sh shared
suffix_ratios _gs gpusampler
suffix_ratios _ga autosampler
suffix_ratios _gh gpuhosttopology
suffix_ratios _gd gpudevicetopology

# Link prediction next to node classification of the same config in this run (value: link
# seeds/s over node seeds/s; link seeds are positive training edges).
for c in $CONFIGS; do
  [[ $c == *_link ]] || continue
  node=${c%_link}
  [[ -n ${SEEDS_PER_S[$c]:-} && -n ${SEEDS_PER_S[$node]:-} ]] || continue
  emit "$(python3 -c "
import json, sys
node, link = float(sys.argv[1]), float(sys.argv[2])
print(json.dumps({'name': 'gpu_train_link_vs_node_' + sys.argv[3], 'value': round(link / node, 3),
                  'unit': 'x', 'baseline': node, 'link_seeds_per_s': link,
                  'ratio': round(link / node, 3)}))" "${SEEDS_PER_S[$node]}" "${SEEDS_PER_S[$c]}" "$node")"
done

# MATRIX: every run against its GPU count's untrimmed fp32 run of this script (value: the
# baseline's epoch time over the run's, > 1 = faster).
if [[ -n $MATRIX ]]; then
  for b in $MATRIX_BASES; do
    base=${b}_untrimmed_fp32
    [[ -n ${EPOCH_TIME[$base]:-} ]] || continue
    for c in $CONFIGS; do
      [[ $c == "$b"_* && $c != "$base" && -n ${EPOCH_TIME[$c]:-} ]] || continue
      ratio_line "gpu_train_ratio_${c}_vs_$base" "${EPOCH_TIME[$base]}" "${EPOCH_TIME[$c]}" \
        "${EPOCH_TIME[$base]}"
    done
  done
fi

PAIRS="1gpu_1srv:2gpu_2srv 1gpu_2srv:2gpu_2srv 1gpu_1srv:4gpu_4srv 1gpu_2srv:4gpu_2srv 1gpu_2srv:4gpu_4srv"
for suffix in "" _reg _reg_p16; do
  for pair in $PAIRS; do
    read -r a b <<<"${pair//:/ }"
    a=$a$suffix b=$b$suffix
    [[ -n ${EPOCH_TIME[$a]:-} && -n ${EPOCH_TIME[$b]:-} ]] || continue
    ratio_line "gpu_train_speedup_${a}_to_$b" "${EPOCH_TIME[$a]}" "${EPOCH_TIME[$b]}" "${EPOCH_TIME[$a]}"
  done
done
log "done in ${SECONDS}s; results in $OUT/results.jsonl"
