#!/usr/bin/env bash
# Builds graphshard the way CI does: installs the Debian packages (deploy/install-deps.sh), then
# configures with the `default` preset and builds. Binaries land in <build dir>/bin.
#   CI=1                     adds -DGRAPHSHARD_WERROR=ON
#   GRAPHSHARD_BUILD_DIR=D   builds into D instead of the preset's build/ (relative to the repo)
#   GRAPHSHARD_JOBS=N        parallel compile jobs (default: Ninja's own choice)
#   GRAPHSHARD_SKIP_DEPS=1   skips the package check (no apt, no sudo)
# Extra arguments are passed to the configure step (e.g. -DGRAPHSHARD_BUILD_TRAINER=OFF).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ "${GRAPHSHARD_SKIP_DEPS:-0}" != 1 ]]; then
  deploy/install-deps.sh
fi

build_dir=${GRAPHSHARD_BUILD_DIR:-build}
configure=(cmake --preset default)
[[ "$build_dir" != build ]] && configure+=(-B "$build_dir")
[[ "${CI:-}" == 1 || "${CI:-}" == true ]] && configure+=(-DGRAPHSHARD_WERROR=ON)
"${configure[@]}" "$@"

build=(cmake --build "$build_dir")
[[ -n "${GRAPHSHARD_JOBS:-}" ]] && build+=(-j "$GRAPHSHARD_JOBS")
"${build[@]}"
