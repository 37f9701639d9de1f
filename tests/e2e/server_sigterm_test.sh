#!/usr/bin/env bash
# SIGTERM (and SIGINT) stop a serving graphshard-server gracefully: exit status 0, promptly.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server

partition_cora "$WORK/cora2"
for sig in TERM INT; do
  rm -rf "$WORK/registry"
  timeout 120 "$BIN/graphshard-server" --partition "$WORK/cora2" --part 0 --listen 127.0.0.1:0 \
    --registry "$WORK/registry" >"$WORK/server.log" 2>&1 &
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
  kill -"$sig" "$server"
  wait_pid "$pid" 30
  show "$WORK/server.log"
  [[ $WAIT_STATUS != timeout ]] || fail "server still running 30 s after SIG$sig"
  [[ $WAIT_STATUS == 0 ]] || fail "server exited with status $WAIT_STATUS after SIG$sig, expected 0"
  note "SIG$sig: exit 0"
done
note ok
