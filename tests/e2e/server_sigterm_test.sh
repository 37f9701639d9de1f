#!/usr/bin/env bash
# SIGTERM (and SIGINT) stop a serving graphshard-server gracefully: exit status 0, promptly.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server

partition_cora "$WORK/cora2"
# The SIGTERM run also checks the allocator settings (server/malloc_tuning.h): the server
# re-executed itself once, same pid and process name, with GLIBC_TUNABLES set; the SIGINT run
# passes --malloc-reuse-mib 0, which keeps glibc's defaults.
for sig in TERM INT; do
  rm -rf "$WORK/registry"
  malloc=()
  [[ $sig == INT ]] && malloc=(--malloc-reuse-mib 0)
  timeout 120 "$BIN/graphshard-server" --partition "$WORK/cora2" --part 0 --listen 127.0.0.1:0 \
    --registry "$WORK/registry" "${malloc[@]}" >"$WORK/server.log" 2>&1 &
  pid=$!
  if ! wait_for_file "$WORK/registry/part_0" 60; then
    show "$WORK/server.log"
    fail "server did not register within 60 s"
  fi
  addr=$(cat "$WORK/registry/part_0")
  [[ $addr =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "registry entry '$addr' is not host:port"
  if [[ -x $BIN/graphshard-health ]]; then
    timeout 60 "$BIN/graphshard-health" --registry "$WORK/registry" --parts 1 --timeout-s 30 ||
      fail "graphshard-health: server at $addr not SERVING"
  fi
  # `timeout` is our child; signal the server itself.
  server=$(pgrep -P "$pid" -f graphshard-server || true)
  [[ -n $server ]] || fail "cannot find the server process under timeout (pid $pid)"
  [[ $(cat "/proc/$server/comm") == graphshard-serv* ]] ||
    fail "server process name is '$(cat "/proc/$server/comm")' after the re-exec"
  if [[ $sig == TERM ]]; then
    tr '\0' '\n' <"/proc/$server/environ" | grep -qx GRAPHSHARD_MALLOC_TUNED=1 ||
      fail "the server did not re-execute with the allocator settings"
  else
    tr '\0' '\n' <"/proc/$server/environ" | grep -q GRAPHSHARD_MALLOC_TUNED &&
      fail "--malloc-reuse-mib 0 still re-executed"
  fi
  kill -"$sig" "$server"
  wait_pid "$pid" 30
  show "$WORK/server.log"
  [[ $WAIT_STATUS != timeout ]] || fail "server still running 30 s after SIG$sig"
  [[ $WAIT_STATUS == 0 ]] || fail "server exited with status $WAIT_STATUS after SIG$sig, expected 0"
  note "SIG$sig: exit 0"
done
note ok
