#!/usr/bin/env bash
# A damaged partition folder makes graphshard-server fail fast and clearly: non-zero exit, a
# message naming the file, no registry entry. And the launcher gives up at once, not at its
# health deadline.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server

# check_server_rejects PART_DIR PART FILE: server for PART exits 1 within 60 s, naming FILE.
check_server_rejects() {
  local dir=$1 part=$2 file=$3 status=0
  rm -rf "$WORK/registry"
  timeout 60 "$BIN/graphshard-server" --partition "$dir" --part "$part" --listen 127.0.0.1:0 \
    --registry "$WORK/registry" >"$WORK/server.out" 2>"$WORK/server.err" || status=$?
  show "$WORK/server.err"
  ((status != 124)) || fail "server on a damaged partition still running after 60 s"
  ((status != 0)) || fail "server accepted a partition with a damaged $file"
  ((status < 128)) || fail "server crashed (status $status) instead of reporting an error"
  grep -qF "$file" "$WORK/server.err" || fail "server's error does not name $file"
  [[ ! -e $WORK/registry/part_$part ]] || fail "server registered despite the error"
}

partition_cora "$WORK/missing"
rm "$WORK/missing/part_1/nodes/node/label.npy"
note "missing part_1/nodes/node/label.npy"
check_server_rejects "$WORK/missing" 1 "label.npy"

partition_cora "$WORK/truncated"
f=$WORK/truncated/part_0/edges/node__to__node/indices.npy
truncate -s $(($(stat -c %s "$f") / 2)) "$f"
note "truncated part_0/edges/node__to__node/indices.npy"
check_server_rejects "$WORK/truncated" 0 "indices.npy"

if [[ -x $BIN/graphshard-health && -x $BIN/graphshard-trainer ]]; then
  note "launcher on the damaged partition"
  status=0
  start=$SECONDS
  timeout 120 "$LAUNCH" --partition "$WORK/missing" --servers 2 --trainers 2 --bin-dir "$BIN" \
    --registry "$WORK/registry" --server-wait-s 100 >"$WORK/launch.out" 2>"$WORK/launch.err" ||
    status=$?
  show "$WORK/launch.err"
  ((status != 0 && status != 124)) || fail "launcher exit status $status, expected a failure"
  ((SECONDS - start < 60)) || fail "launcher took $((SECONDS - start)) s to notice a dead server"
  grep -qF "label.npy" "$WORK/launch.err" || fail "launcher output does not name label.npy"
  [[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
else
  note "launcher part not run: graphshard-health or graphshard-trainer not built"
fi
note ok
