#!/usr/bin/env bash
# Partition benchmark: wall time and peak RSS of each step of partitioning the full
# ogbn-products-shaped graph of tests/bench/gen_products_like.py (2,449,029 nodes,
# 123,718,280 directed edges, 100 float32 features) into 2 and 4 parts with METIS and random.
# Prints one JSON line per measurement and appends a table to tests/bench/RESULTS.md.
#
#   tests/bench/partition_bench.sh [--data DIR] [--bin DIR] [--work DIR] [--parts "2 4"]
#                                  [--methods "metis random"] [--keep] [--no-results]
#
# --data: the generated graph (generated there, and timed, if DIR/edge_index.npy is missing);
# --bin: where graphshard-partition is (default build/bin); --work: scratch space for the
# partition folders (each ~3 GB; removed after measuring unless --keep).
# Needs GNU time (/usr/bin/time, Debian package `time`) and, to generate, python3 with numpy.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DATA="${ROOT}/../data/products_full"
BIN="${ROOT}/build/bin"
WORK="${ROOT}/../data/partition_bench"
PARTS="2 4"
METHODS="metis random"
KEEP=0
RESULTS=1
GEN="${ROOT}/tests/bench/gen_products_like.py"
PYTHON="${PYTHON:-/usr/bin/python3}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --parts) PARTS="$2"; shift 2 ;;
    --methods) METHODS="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --no-results) RESULTS=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

TOOL="${BIN}/graphshard-partition"
[[ -x "${TOOL}" ]] || { echo "no ${TOOL}; build it first" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "needs GNU time: apt-get install time" >&2; exit 1; }
mkdir -p "${WORK}"

ROWS=()
DETAILS=()
# measure NAME OUTFOLDER COMMAND...: runs COMMAND under /usr/bin/time -v and records a row.
measure() {
  local name="$1" folder="$2"; shift 2
  local tlog="${WORK}/${name}.time" log="${WORK}/${name}.log"
  echo "== ${name}: $*" >&2
  /usr/bin/time -v -o "${tlog}" "$@" >"${log}" 2>&1 || { cat "${log}" >&2; exit 1; }
  local wall rss_kb size=0 cut="" remote="" train=""
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "${tlog}" |
         awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "${tlog}")
  if [[ -n "${folder}" ]]; then
    size=$(du -sb "${folder}" | cut -f1)
    local json
    json=$("${TOOL}" inspect "${folder}" --json --no-verify)
    cut=$(echo "${json}" | "${PYTHON}" -c 'import json,sys; print(json.load(sys.stdin)["edge_cut"])')
    remote=$(echo "${json}" | "${PYTHON}" -c \
      'import json,sys; print("%.4f" % json.load(sys.stdin)["remote_fraction"])')
    train=$(echo "${json}" | "${PYTHON}" -c \
      'import json,sys; print("%.3f" % json.load(sys.stdin)["train_balance"])')
  fi
  local rss_gib size_gb ratio
  rss_gib=$(awk -v k="${rss_kb}" 'BEGIN{printf "%.2f", k/1048576}')
  size_gb=$(awk -v b="${size}" 'BEGIN{printf "%.2f", b/1e9}')
  ratio=$(awk -v k="${rss_kb}" -v b="${size}" 'BEGIN{ if (b>0) printf "%.2f", k*1024/b; else print "-" }')
  printf '{"name": "%s_wall", "value": %s, "unit": "s"}\n' "${name}" "${wall}"
  printf '{"name": "%s_peak_rss", "value": %s, "unit": "GiB"}\n' "${name}" "${rss_gib}"
  [[ -n "${folder}" ]] && printf '{"name": "%s_folder", "value": %s, "unit": "GB"}\n' \
    "${name}" "${size_gb}"
  ROWS+=("| ${name} | ${wall} | ${rss_gib} | ${size_gb} | ${ratio} | ${cut:--} | ${remote:--} | ${train:--} |")
}

if [[ ! -f "${DATA}/edge_index.npy" ]]; then
  measure generate "" "${PYTHON}" "${GEN}" --out "${DATA}" --quiet
fi
for method in ${METHODS}; do
  for k in ${PARTS}; do
    out="${WORK}/${method}-${k}"
    rm -rf "${out}"
    measure "partition_${method}_${k}" "${out}" \
      "${TOOL}" partition --input "${DATA}" --parts "${k}" --method "${method}" --seed 0 \
      --out "${out}"
    grep -E "done|edge cut|metis:" "${WORK}/partition_${method}_${k}.log" >&2 || true
    # Steps inside the run, from the progress lines: "<step>: done (...) in X s".
    steps=$(sed -n 's/^\[graphshard-partition\] \(.*\): done .* in \([0-9.]*\) s$/\1 \2 s/p' \
      "${WORK}/partition_${method}_${k}.log" | paste -sd ';' - | sed 's/;/; /g')
    DETAILS+=("- partition_${method}_${k}: ${steps}")
    [[ "${KEEP}" == 1 ]] || rm -rf "${out}"
  done
done

if [[ "${RESULTS}" == 1 ]]; then
  {
    echo
    echo "## Partition tool at ogbn-products scale ($(date -u +%Y-%m-%d))"
    echo
    echo "Machine: $(hostname), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
    echo "$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM. Graph: gen_products_like.py defaults (2,449,029 nodes,"
    echo "123,718,280 directed edges, 100 features). Command: \`tests/bench/partition_bench.sh\`, each"
    echo "step \`graphshard-partition partition --input DATA --parts K --method M --seed 0 --out DIR\`"
    echo "under \`/usr/bin/time -v\`. RSS/size = peak RSS / bytes of the partition folder (target <= 3)."
    echo "remote = fraction of stored in-edges whose source another part owns; train bal. = max / mean"
    echo "training nodes per part."
    echo
    echo "| step | wall s | peak RSS GiB | folder GB | RSS/size | edge cut | remote | train bal. |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "Steps inside each run (wall seconds, from the tool's progress lines):"
    echo
    printf '%s\n' "${DETAILS[@]}"
  } >>"${ROOT}/tests/bench/RESULTS.md"
fi
