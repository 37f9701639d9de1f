#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (built with the `fuzz` preset: `cmake --preset fuzz &&
# cmake --build build-fuzz --target fuzz_all`), each for SECONDS, one after the other, and
# prints one JSON line per target:
#   {"name": "fuzz_<t>", "seconds": S, "execs": N, "execs_per_s": R, "coverage": C,
#    "features": F, "corpus": K, "new_units": U, "peak_rss_mb": M, "crashes": 0|1,
#    "artifact": "<path of the crashing input>"|null}
# coverage is libFuzzer's "cov" (edges of the instrumented code reached), features its "ft".
# Each target starts from its checked-in seeds (tests/fuzz/corpus/<t>/) plus what earlier runs
# found (<build>/fuzz-corpus/<t>/, kept between runs). A target stops at its first crash
# (a sanitizer report, an abort from a broken invariant, a timeout of 10 s or 2 GB of RSS);
# the input is saved under <build>/fuzz-artifacts/ and the log's tail printed on stderr.
#   tests/fuzz/run_long.sh [--build DIR] [--seconds S] [target ...]   (default: all, 600 s)
# Exit status: 0 if no target crashed, 1 otherwise, 2 on bad use (e.g. targets not built).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build=build-fuzz
seconds=600
targets=()
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "run_long.sh: unknown flag $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(npy_manifest partition_folder bulk_frame requests tu_reader ogb_reader)

crashed=0
for t in "${targets[@]}"; do
  bin="$build/bin/fuzz_$t"
  if [[ ! -x "$bin" ]]; then
    echo "run_long.sh: $bin not built (cmake --preset fuzz && cmake --build $build --target fuzz_all)" >&2
    exit 2
  fi
  work="$build/fuzz-corpus/$t"
  artifacts="$build/fuzz-artifacts"
  mkdir -p "$work" "$artifacts"
  log=$(mktemp)
  status=0
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
    crashed=1
    echo "run_long.sh: fuzz_$t failed (exit $status); log tail:" >&2
    tail -40 "$log" >&2
  fi
  execs=$(stat number_of_executed_units)
  printf '{"name": "fuzz_%s", "seconds": %s, "execs": %s, "execs_per_s": %s, "coverage": %s, "features": %s, "corpus": %s, "new_units": %s, "peak_rss_mb": %s, "crashes": %s, "artifact": %s}\n' \
    "$t" "$seconds" "${execs:-0}" "$(stat average_exec_per_sec)" "$(field cov)" "$(field ft)" \
    "$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")" "$(stat new_units_added)" \
    "$(stat peak_rss_mb)" "$crash" "$([[ -n "$artifact" ]] && echo "\"$artifact\"" || echo null)"
  rm -f "$log"
done
exit "$crashed"
