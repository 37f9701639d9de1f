#!/usr/bin/env bash
# The launcher, with GRAPHSHARD_E2E_TRAINER_ARGS (word-split) added to the trainers' flags: lib.sh
# points LAUNCH here when that variable is set, so that the end-to-end scripts run on another
# device without edits, e.g. on the GPU machine:
#   GRAPHSHARD_E2E_TRAINER_ARGS="--device cuda --deterministic" ctest --test-dir build-gpu -L e2e
# (--deterministic: scripts that compare weights bit for bit need it on CUDA). A call without
# trainer flags (no "--") is passed through as is.
set -euo pipefail
launcher=$(dirname "$0")/../../deploy/graphshard-launch
for arg in "$@"; do
  if [[ $arg == -- ]]; then
    # shellcheck disable=SC2086  # word-split on purpose
    exec "$launcher" "$@" ${GRAPHSHARD_E2E_TRAINER_ARGS:-}
  fi
done
exec "$launcher" "$@"
