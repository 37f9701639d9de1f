#!/usr/bin/env bash
# Builds (deploy/build.sh, same environment variables) and runs every CPU test with CTest.
# Tests labelled "gpu" are excluded here (they need a CUDA device; see docs/DEVELOPERS.md).
# A test that reports itself skipped fails this script: nothing that did not run counts as
# passing (set GRAPHSHARD_ALLOW_SKIPS=1 to only list them). Extra arguments go to ctest,
# e.g. `deploy/test.sh -R e2e`. Exit status: ctest's (or 1 for skipped tests), or the first
# failing stage's.
#
# Stages (docs/DEVELOPERS.md, "Sanitizers, fuzzing, thread-safety analysis"), in this order:
#   default        deploy/build.sh, then the suite
#   asan           the `asan-ubsan` preset (build-asan/: clang, no LibTorch trainer): the suite
#   thread-safety  clang -Wthread-safety over the default build's sources (tests/ci/thread_safety.py)
#                  that the asan stage's build (clang, -Wthread-safety) did not compile
#   tsan           the `tsan` preset (build-tsan/): the shm ring tests under ThreadSanitizer
#   fuzz           build-asan/ again (its libraries carry libFuzzer's coverage): every libFuzzer
#                  target for GRAPHSHARD_FUZZ_SECONDS (default 30) from its seed corpus
#                  (tests/fuzz/), GRAPHSHARD_JOBS (default 2) targets at a time
# GRAPHSHARD_STAGES="..." picks them (space-separated); the default is "default", and with CI=1
# $ci_stages below (what .ci/run runs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ci_stages="default asan thread-safety tsan fuzz"
ci=0
[[ "${CI:-}" == 1 || "${CI:-}" == true ]] && ci=1
if [[ -n "${GRAPHSHARD_STAGES:-}" ]]; then
  stages=" ${GRAPHSHARD_STAGES} "
elif ((ci)); then
  stages=" $ci_stages "
else
  stages=" default "
fi
for s in $stages; do
  case "$s" in default|asan|thread-safety|tsan|fuzz) ;;
    *) echo "test.sh: unknown stage '$s' in GRAPHSHARD_STAGES" >&2; exit 2 ;;
  esac
done
jobs=(); [[ -n "${GRAPHSHARD_JOBS:-}" ]] && jobs=(-j "$GRAPHSHARD_JOBS")
werror=(); ((ci)) && werror=(-DGRAPHSHARD_WERROR=ON)
stage_start=$SECONDS
stage_done() { echo "test.sh: stage $1 passed in $((SECONDS - stage_start)) s" >&2; stage_start=$SECONDS; }

# ctest over build dir $1 (more arguments: ctest's); fails on failed or skipped tests.
run_suite() {
  local dir=$1
  shift
  local log status=0
  log=$(mktemp)
  ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "${GRAPHSHARD_TEST_JOBS:-2}" \
    -LE gpu "$@" 2>&1 | tee "$log" || status=$?
  if ((status != 0)); then
    rm -f "$log"
    return "$status"
  fi
  # CTest prints skipped tests as "... ***Skipped" (SKIP_RETURN_CODE / SKIP_REGULAR_EXPRESSION,
  # e.g. GTEST_SKIP through gtest_discover_tests) and still exits 0.
  if grep -q -e '\*\*\*Skipped' -e ' Not Run' "$log"; then
    echo "test.sh: these tests did not run ($dir):" >&2
    grep -e '\*\*\*Skipped' -e ' Not Run' "$log" >&2
    if [[ "${GRAPHSHARD_ALLOW_SKIPS:-0}" != 1 ]]; then
      rm -f "$log"
      return 1
    fi
  fi
  rm -f "$log"
}

if [[ "$stages" == *" default "* || "$stages" == *" thread-safety "* ]]; then
  deploy/build.sh
fi
build_dir=${GRAPHSHARD_BUILD_DIR:-build}

if [[ "$stages" == *" default "* ]]; then
  run_suite "$build_dir" "$@"
  stage_done default
fi

if [[ "$stages" == *" asan "* ]]; then
  # The whole CPU suite under AddressSanitizer + UndefinedBehaviorSanitizer (any report aborts
  # the process: -fno-sanitize-recover=all; leaks fail it at exit), servers and tools in the
  # end-to-end scripts included. No LibTorch trainer: docs/DEVELOPERS.md says why.
  cmake --preset asan-ubsan "${werror[@]}" >/dev/null
  cmake --build build-asan "${jobs[@]}"
  # Left out: ServerMemoryTest.PeakRssStaysUnderTheBudget measures the server's RSS, which ASan's
  # shadow memory and quarantine inflate (the default stage runs it).
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    run_suite build-asan -E '^ServerMemoryTest\.PeakRssStaysUnderTheBudget$' "$@"
  stage_done asan
fi

if [[ "$stages" == *" thread-safety "* ]]; then
  # The asan stage's clang build compiled its files with -Wthread-safety (-Werror under CI):
  # those are not parsed again.
  checked_by=()
  [[ "$stages" == *" asan "* ]] && checked_by=(--checked-by build-asan)
  python3 tests/ci/thread_safety.py "$build_dir" -j "${GRAPHSHARD_JOBS:-2}" "${checked_by[@]}"
  stage_done thread-safety
fi

if [[ "$stages" == *" tsan "* ]]; then
  cmake --preset tsan >/dev/null
  cmake --build build-tsan "${jobs[@]}" --target shm_ring_test shm_ring_threads_test
  TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
    run_suite build-tsan -R '^ShmRing'
  stage_done tsan
fi

if [[ "$stages" == *" fuzz "* ]]; then
  # The asan stage's tree (already built when that stage ran): one instrumented build serves both.
  cmake --preset asan-ubsan "${werror[@]}" >/dev/null
  cmake --build build-asan "${jobs[@]}" --target fuzz_all
  tests/fuzz/run_long.sh --build build-asan --seconds "${GRAPHSHARD_FUZZ_SECONDS:-30}" \
    --jobs "${GRAPHSHARD_JOBS:-2}"
  stage_done fuzz
fi
exit 0
