#!/usr/bin/env bash
# A local client without the job token tries to take a server's descriptors: a server on Cora
# (1 part) runs under an open-file limit of 256 (soft and hard), and a client opens 300
# connections to its bulk port, each sending 3 bytes of a frame header and then nothing.
#  - The bulk port holds at most a quarter of the limit (64): the server closes the rest as it
#    accepts them, so its descriptors stay below the limit.
#  - Meanwhile the published gRPC port keeps answering: graphshard-health says SERVING.
#  - The partial headers are closed after the frame timeout, the silent ones after the
#    first-frame timeout, without the client closing anything.
#  - After the attack the server still serves (a second health check).
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health

partition_cora "$WORK/cora1" 1
bulk=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(
  ulimit -n 256 || exit 97
  exec timeout 300 "$BIN/graphshard-server" --partition "$WORK/cora1" --part 0 \
    --listen 127.0.0.1:0 --registry "$WORK/registry" --bulk-port "$bulk" --malloc-reuse-mib 0
) >"$WORK/server.log" 2>&1 &
launcher=$!
wait_for_file "$WORK/registry/part_0" 60 || { show "$WORK/server.log"; fail "server did not register"; }
server=$(pgrep -P "$launcher" -f graphshard-server || true)
[[ -n $server ]] || fail "cannot find the server process"
grep -q "Max open files *256 *256" "/proc/$server/limits" || fail "the server's limit is not 256"

# The attacker: 300 connections, 3 header bytes each; reports how many the server closed at
# once, then holds the rest until $WORK/release exists (at most 90 s), reporting how many the
# server closed by itself by then.
python3 - "$bulk" "$WORK" >"$WORK/attacker.log" 2>&1 <<'PY' &
import os, select, socket, sys, time
port, work = int(sys.argv[1]), sys.argv[2]
socks = []
for i in range(300):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        s.send(b"\x01\x02\x03")
    except OSError as e:
        print(f"connect {i}: {e}")
        break
    socks.append(s)
def closed_by_server():
    n = 0
    for s in socks:
        r, _, _ = select.select([s], [], [], 0)
        if r:
            try:
                if s.recv(1, socket.MSG_PEEK) == b"":
                    n += 1
            except OSError:
                n += 1
    return n
time.sleep(2)
print(f"opened {len(socks)} closed_at_once {closed_by_server()}", flush=True)
open(os.path.join(work, "attacking"), "w").write("1")
deadline = time.time() + 90
while time.time() < deadline and not os.path.exists(os.path.join(work, "release")):
    time.sleep(0.2)
print(f"closed_by_then {closed_by_server()}", flush=True)
PY
attacker=$!
wait_for_file "$WORK/attacking" 60 || { show "$WORK/attacker.log"; fail "the attacker did not start"; }
show "$WORK/attacker.log"
read -r _ opened _ at_once < <(grep "^opened" "$WORK/attacker.log")
((opened == 300)) || fail "the attacker opened $opened connections, not 300"
((at_once >= 300 - 64)) || fail "the server kept $((300 - at_once)) bulk connections (cap 64)"
fds=$(find "/proc/$server/fd" -mindepth 1 | wc -l)
((fds < 256)) || fail "the server holds $fds descriptors (limit 256)"
note "under attack: $at_once of 300 connections shed at once; the server holds $fds descriptors"
timeout 60 "$BIN/graphshard-health" --registry "$WORK/registry" --parts 1 --timeout-s 20 ||
  { show "$WORK/server.log"; fail "gRPC port not SERVING during the attack"; }
note "ok: health check SERVING during the attack"
# The held ones: closed by the server once the first-frame deadline (10 s) passes.
sleep 12
touch "$WORK/release"
wait_pid "$attacker" 30
show "$WORK/attacker.log"
read -r _ by_then < <(grep "^closed_by_then" "$WORK/attacker.log")
((by_then == 300)) || fail "$((300 - by_then)) stalled connections still open after 12 s"
timeout 60 "$BIN/graphshard-health" --registry "$WORK/registry" --parts 1 --timeout-s 20 ||
  fail "gRPC port not SERVING after the attack"
kill "$server" 2>/dev/null
wait_pid "$launcher" 30
note "ok: every stalled connection closed by the server; SERVING after the attack"
