#!/usr/bin/env bash
# 1 -> G GPUs on one machine, variants side by side, in one call on the GPU machine, from the
# repository root:
#
#   source .devdeps/use-deps.sh .devdeps && bash tests/bench/scaling_bench.sh
#
# Builds once (tests/bench/gpu_train_bench.sh, build-gpu), then runs ROUNDS rounds (default 2);
# each round runs every variant of VARIANTS (default "q1 q3 q3_static") over the
# products-shaped graph, every row on the GPU (ONE, default 1gpu_2srv_reg_dev, and MANY, default
# 2gpu_2srv_reg_dev), EPOCHS (5) epochs each. A variant is a name of parts joined by _:
#   q<N>     GRAPHSHARD_NCCL_QUEUE_DEPTH=N: how many gradient all-reduces a trainer leaves
#            running before it waits for the oldest (trainer/nccl_communicator.cc)
#   cores    trainers and servers pinned by physical core (tests/bench/pin_bin_dir.sh cores:
#            trainer r on both hyperthreads of physical cores 2r, 2r+1; servers elsewhere)
#   static   --static-shapes on
#   torchagg --aggregation torch: SAGE's mean aggregation as torch's operators, not the fused
#            CUDA kernels (trainer/mean_aggregate_kernel.h)
#   gpusample --sampler gpu: the trainers sample their batches on their GPUs
#            (trainer/gpu_sampler.h), not the servers (without it or autosample: --sampler
#            server, gpu_train_bench.sh)
#   autosample --sampler auto, the trainer's default (the GPU where the topology fits)
#   nice     the servers at nice 10 (tests/bench/pin_bin_dir.sh nice): the trainers' threads
#            first where the two compete for cores
# The 1-GPU run of a round is made once per placement, static-shapes, aggregation and sampler
# setting (the queue
# depth does not apply to it). Every run's JSON line goes to $OUT/runs.jsonl with "variant" and
# "round"; the last line printed is the summary: per variant the median steady epoch of ONE and
# MANY over the rounds, and MANY's speedup over the same round's ONE of the same placement and
# shapes, and over the fastest ONE of that round. TOTAL_BUDGET (560): seconds for the whole
# script; a variant that would start with less than 60 s left is skipped and reported. Other
# knobs as gpu_train_bench.sh's.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/scaling-bench-out}
ROUNDS=${ROUNDS:-2}
VARIANTS=${VARIANTS:-"q1 q3 q3_static"}
ONE=${ONE:-1gpu_2srv_reg_dev}
MANY=${MANY:-2gpu_2srv_reg_dev}
EPOCHS=${EPOCHS:-5}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
: >"$OUT/runs.jsonl"

# Every variant checked before anything runs.
for variant in $VARIANTS; do
  for part in ${variant//_/ }; do
    [[ $part =~ ^(q[0-9]+|cores|nice|static|torchagg|gpusample)$ ]] ||
      { echo "scaling_bench.sh: unknown part '$part' of variant '$variant' (known: q<N>, cores, nice, static, torchagg, gpusample)" >&2; exit 2; }
  done
done

if [[ -z ${BIN_DIR:-} ]]; then
  CONFIGS="" OUT="$OUT/build" bash tests/bench/gpu_train_bench.sh >"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log" >&2; exit 1; }
  BIN_DIR=${BUILD:-$ROOT/build-gpu}/bin
fi
BIN_DIR=$(cd "$BIN_DIR" && pwd)
PINNED=$OUT/pinned-bin
bash tests/bench/pin_bin_dir.sh "$PINNED" cores "$BIN_DIR"
NICED=$OUT/niced-bin
bash tests/bench/pin_bin_dir.sh "$NICED" nice "$BIN_DIR"
python3 tests/bench/physical_cores.py describe >"$OUT/physical_cores.txt"

for round in $(seq 1 "$ROUNDS"); do
  declare -A ONE_DONE=()
  for variant in $VARIANTS; do
    depth=1 bin=$BIN_DIR extra="" placement=free shapes=off agg=fused sampler=server
    for part in ${variant//_/ }; do
      case $part in
        q[0-9]*) depth=${part#q} ;;
        cores) bin=$PINNED placement=cores ;;
        nice) bin=$NICED placement=nice ;;
        static) extra="$extra --static-shapes on" shapes=on ;;
        torchagg) extra="$extra --aggregation torch" agg=torch ;;
        gpusample) extra="$extra --sampler gpu" sampler=gpu ;;
        autosample) extra="$extra --sampler auto" sampler=auto ;;
        *) echo "unknown variant part '$part' in $variant" >&2; exit 2 ;;
      esac
    done
    configs=$MANY
    if [[ -z ${ONE_DONE[$placement-$shapes-$agg-$sampler]:-} ]]; then
      configs="$ONE $MANY"
      ONE_DONE[$placement-$shapes-$agg-$sampler]=1
    fi
    dir="$OUT/$variant-$round"
    left=$((${TOTAL_BUDGET:-560} - SECONDS))
    if ((left < 60)); then
      echo "{\"name\": \"scaling_bench\", \"error\": \"skipped $variant round $round: ${left}s left\"}" |
        tee -a "$OUT/runs.jsonl" >&2
      continue
    fi
    GRAPHSHARD_NCCL_QUEUE_DEPTH=$depth BIN_DIR=$bin EPOCHS=$EPOCHS CONFIGS=$configs OUT=$dir \
      TOTAL_BUDGET=$left TRAINER_EXTRA="$extra ${TRAINER_EXTRA:-}" \
      bash tests/bench/gpu_train_bench.sh >"$dir.log" 2>&1
    "$PYTHON" - "$dir/results.jsonl" "$variant" "$round" "$placement" "$shapes" "$agg" "$sampler" \
      >>"$OUT/runs.jsonl" <<'PY'
import json, sys
path, variant, rnd, placement, shapes, agg, sampler = sys.argv[1:]
try:
    lines = open(path).read().splitlines()
except OSError as e:
    lines = [json.dumps({"name": "gpu_train_bench", "error": str(e)})]
for line in lines:
    if line.startswith("{") and ('"config"' in line or '"error"' in line):
        r = json.loads(line)
        r.update(variant=variant, round=int(rnd), placement=placement, static_shapes=shapes,
                 aggregation=agg, sampler=sampler)
        print(json.dumps(r))
PY
  done
  unset ONE_DONE
done

"$PYTHON" - "$OUT/runs.jsonl" "gpu_train_$ONE" "gpu_train_$MANY" <<'PY'
import json, statistics, sys
path, one, many = sys.argv[1:]
runs = [json.loads(l) for l in open(path) if l.strip()]
ok = [r for r in runs if "error" not in r and "steady_epoch_time_s" in r]
summary = {"name": "scaling_bench", "unit": "s/epoch (steady, median over rounds)",
           "errors": len(runs) - len(ok), "variants": {}}
def one_of(rnd, placement, shapes, agg, sampler):
    return [r["steady_epoch_time_s"] for r in ok if r["name"] == one and r["round"] == rnd
            and r["placement"] == placement and r["static_shapes"] == shapes
            and r.get("aggregation", "fused") == agg and r.get("sampler", "server") == sampler]
for v in dict.fromkeys(r["variant"] for r in ok):
    mine = [r for r in ok if r["variant"] == v and r["name"] == many]
    same, best = [], []
    for r in mine:
        base = one_of(r["round"], r["placement"], r["static_shapes"],
                      r.get("aggregation", "fused"), r.get("sampler", "server"))
        fastest = [x["steady_epoch_time_s"] for x in ok if x["name"] == one
                   and x["round"] == r["round"]]
        if base:
            same.append(base[0] / r["steady_epoch_time_s"])
        if fastest:
            best.append(min(fastest) / r["steady_epoch_time_s"])
    entry = {"many_s": [r["steady_epoch_time_s"] for r in mine],
             "allreduce_s": [r.get("allreduce_s") for r in mine],
             "data_wait": [r.get("data_wait_fraction") for r in mine]}
    if mine:
        entry["many_median_s"] = round(statistics.median(entry["many_s"]), 3)
    if same:
        entry["speedup_vs_one_same_setting"] = [round(x, 2) for x in same]
    if best:
        entry["speedup_vs_fastest_one"] = [round(x, 2) for x in best]
    summary["variants"][v] = entry
summary["one_s"] = {f'{r["placement"]}/{r["static_shapes"]}/{r.get("aggregation", "fused")}/'
                    f'{r.get("sampler", "server")} round {r["round"]}':
                    r["steady_epoch_time_s"] for r in ok if r["name"] == one}
if ok:
    summary["gpu"] = ok[0]["config"].get("gpu")
    summary["cores"] = ok[0]["config"].get("cores")
print(json.dumps(summary))
PY
