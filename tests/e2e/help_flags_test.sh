#!/usr/bin/env bash
# One flag scheme for every binary (common/flags.h): `--help` and `-h` print usage on stdout
# listing every flag of the command-line contract and exit 0, for every binary and each
# graphshard-partition subcommand; an unknown flag exits 2 naming it.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"

# check_help "CMD..." FLAG...: CMD --help and CMD -h exit 0 and list every FLAG on stdout.
check_help() {
  local -a cmd
  read -r -a cmd <<<"$1"
  shift
  local h status out
  for h in --help -h; do
    status=0
    out=$(timeout 20 "$BIN/${cmd[0]}" "${cmd[@]:1}" "$h" 2>"$WORK/err") || status=$?
    ((status == 0)) || { show "$WORK/err"; fail "${cmd[*]} $h: exit $status, expected 0"; }
    local flag
    for flag in "$@"; do
      grep -qF -- "$flag" <<<"$out" || { echo "$out" >&2; fail "${cmd[*]} $h does not list $flag"; }
    done
  done
  # An unknown flag: exit 2, named.
  status=0
  timeout 20 "$BIN/${cmd[0]}" "${cmd[@]:1}" --no-such-flag-e2e=1 >/dev/null 2>"$WORK/err" ||
    status=$?
  ((status == 2)) || { show "$WORK/err"; fail "${cmd[*]} --no-such-flag-e2e: exit $status, not 2"; }
  grep -qF -- "--no-such-flag-e2e" "$WORK/err" ||
    { show "$WORK/err"; fail "${cmd[*]}: unknown flag not named"; }
  note "${cmd[*]}: --help, -h, unknown flag ok"
}

need_bin graphshard-server graphshard-health graphshard-partition graphshard-stats
check_help graphshard-server --partition --part --listen --registry --servers --rpc-timeout-s \
  --shutdown-grace-s --threads --prefetch --max-streams --shm --peer-features --peer-sampling \
  --isolated-peers --peer-cache-mib --peer-piece-mib --peer-dtype --stall-timeout-s --replica
# The bulk transport's flags (docs/TRANSPORT.md).
check_help graphshard-server --peer-transport --bulk-port --bulk-max-frame-mib --bulk-connections
# Cost limits (docs/SERVER.md, "Limits").
check_help graphshard-server --max-client-streams --memory-budget-mib --client-memory-mib \
  --max-request-nodes --max-request-edges --max-request-mib
# glibc's allocator thresholds (docs/SERVER.md, "Memory reuse").
check_help graphshard-server --malloc-reuse-mib
check_help graphshard-health --registry --parts --servers --timeout-s --replicas
# The live view (docs/SERVER.md, "Live view").
check_help graphshard-server --metrics-listen --progress-every-s
check_help graphshard-stats --registry --servers --parts --interval-s --count --timeout-s
# The security flags, the same on every binary that speaks gRPC (docs/SECURITY.md).
SECURITY_FLAGS=(--token-file --tls-ca --tls-cert --tls-key --tls-mutual --tls-server-name)
check_help graphshard-server "${SECURITY_FLAGS[@]}"
check_help graphshard-health "${SECURITY_FLAGS[@]}"
check_help graphshard-stats "${SECURITY_FLAGS[@]}"
check_help "graphshard-partition generate" --kind --seed --out --format --num-nodes --avg-degree \
  --num-edges --num-features --num-classes --scale --num-graphs --min-nodes --max-nodes
check_help "graphshard-partition partition" --input --parts --out --method --seed --split \
  --format --num-nodes --features --labels --train-idx --val-idx --test-idx --undirected --dedup \
  --drop-self-loops --force --quiet --progress-every-s --allow-nonfinite
# Link prediction's edge splits.
check_help "graphshard-partition partition" --edge-split --target-edge-type --reverse-edge-type \
  --edge-split-order
check_help "graphshard-partition inspect" --json --no-verify
# The tool's own --help lists every subcommand's flags.
out=$(timeout 20 "$BIN/graphshard-partition" --help) || fail "graphshard-partition --help failed"
for flag in generate --max-nodes partition --test-idx inspect --no-verify; do
  grep -qF -- "$flag" <<<"$out" || fail "graphshard-partition --help does not list $flag"
done
if [[ ${GRAPHSHARD_NO_TRAINER:-0} != 1 ]]; then  # set by CMake without GRAPHSHARD_BUILD_TRAINER
  need_bin graphshard-trainer
  check_help graphshard-trainer --registry --servers --task --model --layers --epochs --hidden \
    --fanouts --batch-size --lr --weight-decay --seed --dropout --replace --eval-every \
    --normalize-features --threads --prefetch --reuse-rows --device --h2d --backend --feature-dtype \
    --checkpoint-dir --checkpoint-every --resume --metrics-file --tensorboard --progress-every-s \
    --stop-after-steps --rpc-timeout-s --server-wait-s --collective-timeout-s --stall-timeout-s \
    --deterministic --profile-dir --static-shapes --aggregation --sampler
  check_help graphshard-trainer "${SECURITY_FLAGS[@]}"
  # --task link.
  check_help graphshard-trainer --target-edge-type --neg-ratio --neg-sampling --eval-neg-ratio \
    --hits-k
fi
# Abseil's spellings still work where the deploy scripts use them.
status=0
timeout 20 "$BIN/graphshard-health" --servers 127.0.0.1:1 --timeout_s 0 2>"$WORK/err" || status=$?
((status == 1)) || { show "$WORK/err"; fail "graphshard-health --timeout_s: exit $status, not 1"; }
# A bad value exits 1 naming the flag (--prefetch 0 is the auto default, a negative one is refused).
status=0
timeout 20 "$BIN/graphshard-server" --partition "$WORK" --prefetch -1 >/dev/null 2>"$WORK/err" ||
  status=$?
((status == 1)) || { show "$WORK/err"; fail "graphshard-server --prefetch -1: exit $status, not 1"; }
grep -qF -- "--prefetch must be >= 0" "$WORK/err" || { show "$WORK/err"; fail "--prefetch not named"; }
note "graphshard-server --prefetch -1 refused"
status=0
timeout 20 "$BIN/graphshard-server" --partition "$WORK" --peer-piece-mib -1 >/dev/null 2>"$WORK/err" ||
  status=$?
((status != 0)) || fail "graphshard-server --peer-piece-mib -1 was accepted"
grep -qF -- "--peer-piece-mib=-1: expected an integer >= 0" "$WORK/err" ||
  { show "$WORK/err"; fail "--peer-piece-mib not named"; }
note "graphshard-server --peer-piece-mib -1 refused"
