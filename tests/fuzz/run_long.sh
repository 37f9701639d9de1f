#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (built by the `asan-ubsan` preset: `cmake --preset
# asan-ubsan && cmake --build build-asan --target fuzz_all`), each for SECONDS, and
# prints one JSON line per target (in the order given, whatever the order they finish in):
#   {"name": "fuzz_<t>", "seconds": S, "execs": N, "execs_per_s": R, "coverage": C,
#    "features": F, "corpus": K, "new_units": U, "peak_rss_mb": M, "crashes": 0|1,
#    "artifact": "<path of the crashing input>"|null}
# coverage is libFuzzer's "cov" (edges of the instrumented code reached), features its "ft".
# Each target starts from its checked-in seeds (tests/fuzz/corpus/<t>/) plus what earlier runs
# found (<build>/fuzz-corpus/<t>/, kept between runs). A target stops at its first crash
# (a sanitizer report, an abort from a broken invariant, a timeout of 10 s or 2 GB of RSS);
# the input is saved under <build>/fuzz-artifacts/ and the log's tail printed on stderr.
#   tests/fuzz/run_long.sh [--build DIR] [--seconds S] [--jobs N] [target ...]
# (default: all targets, 600 s each, one at a time). --jobs N runs N targets at once (each
# libFuzzer process uses one core): the same seconds per target in 1/N of the wall time.
# Exit status: 0 if no target crashed, 1 otherwise, 2 on bad use (e.g. targets not built).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build=build-asan
seconds=600
jobs=1
targets=()
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "run_long.sh: unknown flag $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(npy_manifest partition_folder bulk_frame requests tu_reader ogb_reader)
usage_error() { echo "run_long.sh: $1" >&2; exit 2; }
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || usage_error "--seconds must be a positive integer, got '$seconds'"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || usage_error "--jobs must be a positive integer, got '$jobs'"
for t in "${targets[@]}"; do
  if [[ ! -x "$build/bin/fuzz_$t" ]]; then
    usage_error "$build/bin/fuzz_$t not built (cmake --preset asan-ubsan && cmake --build \
$build --target fuzz_all)"
  fi
done
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# run_target T: fuzzes T for $seconds; its JSON line goes to $results/T.json, and
# $results/T.crashed exists if it crashed.
run_target() {
  local t=$1 bin="$build/bin/fuzz_$1" work="$build/fuzz-corpus/$1" artifacts="$build/fuzz-artifacts"
  local log status=0 last artifact crash execs
  mkdir -p "$work" "$artifacts"
  log=$(mktemp)
  # The scratch folders the targets write go under TMPDIR: keep them off the repository.
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict=tests/fuzz/fuzz.dict -artifact_prefix="$artifacts/$t-" "$work" "tests/fuzz/corpus/$t" \
    >"$log" 2>&1 || status=$?
  stat() { awk -v k="stat::$1:" '$1 == k {print $2}' "$log" | tail -1; }
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  field() { sed -n "s/.* $1: \([0-9]*\).*/\1/p" <<<"$last"; }
  artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
  crash=0
  if ((status != 0)); then
    crash=1
    : >"$results/$t.crashed"
    echo "run_long.sh: fuzz_$t failed (exit $status); log tail:" >&2
    tail -40 "$log" >&2
  fi
  execs=$(stat number_of_executed_units)
  printf '{"name": "fuzz_%s", "seconds": %s, "execs": %s, "execs_per_s": %s, "coverage": %s, "features": %s, "corpus": %s, "new_units": %s, "peak_rss_mb": %s, "crashes": %s, "artifact": %s}\n' \
    "$t" "$seconds" "${execs:-0}" "$(stat average_exec_per_sec)" "$(field cov)" "$(field ft)" \
    "$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")" "$(stat new_units_added)" \
    "$(stat peak_rss_mb)" "$crash" "$([[ -n "$artifact" ]] && echo "\"$artifact\"" || echo null)" \
    >"$results/$t.json"
  rm -f "$log"
}

running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait
crashed=0
for t in "${targets[@]}"; do
  if ! cat "$results/$t.json" 2>/dev/null; then
    echo "run_long.sh: fuzz_$t left no result" >&2
    crashed=1
  fi
  [[ ! -e "$results/$t.crashed" ]] || crashed=1
done
exit "$crashed"
