#!/usr/bin/env bash
# The live view, against real servers:
#  - 2 servers with --metrics-listen 127.0.0.1:0 log their metrics port; GET /metrics scraped
#    with a real HTTP client (python3's urllib) is Prometheus text whose batch counters and
#    build-latency histogram move after batches are streamed (batch_digest); other paths get
#    404, another method 405, an oversized request 400, and a client that sends nothing does not
#    keep a scrape from being answered;
#  - graphshard-stats --registry prints one line per server per round while batches stream,
#    with a batch rate, build latency, peer traffic and the cache hit rate (isolated peers with
#    a small cache, so that remote rows cross the network and some come from the cache);
#  - against a dead address and a stopped (SIGSTOP) server it names them in their lines
#    ("down: ...") within its deadline and exits 1; a part never registered is named with
#    --parts; usage errors exit 2.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-stats batch_digest

partition_cora "$WORK/cora2"
REG=$WORK/registry
for k in 0 1; do
  timeout 300 "$BIN/graphshard-server" --partition "$WORK/cora2" --part "$k" \
    --listen 127.0.0.1:0 --registry "$REG" --threads 2 --isolated-peers --peer-cache-mib 1 \
    --metrics-listen 127.0.0.1:0 >"$WORK/server_$k.log" 2>&1 &
done
PORTS=()
for k in 0 1; do
  wait_for_file "$REG/part_$k" 60 || { show "$WORK/server_$k.log"; fail "server $k did not register"; }
  port=$(sed -n 's|.*metrics at http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$WORK/server_$k.log")
  [[ $port =~ ^[0-9]+$ ]] || { show "$WORK/server_$k.log"; fail "server $k logged no metrics port"; }
  PORTS+=("$port")
done
SERVERS="$(cat "$REG/part_0"),$(cat "$REG/part_1")"
note "servers $SERVERS, metrics ports ${PORTS[*]}"
# Point 7: not on a terminal, progress comes as whole lines with a final "done" line.
grep -Eq '^\[graphshard-partition\] part 2/2 edges: done \([0-9.]+k?\) in [0-9.]+ s$' \
  "$WORK/partition.log" || { show "$WORK/partition.log"; fail "no partition progress line"; }
grep -Eq '^graphshard-server: load part 0: done \([0-9.]+ (B|kB|MB|GB)\) in [0-9.]+ s$' \
  "$WORK/server_0.log" || { show "$WORK/server_0.log"; fail "no part loading progress line"; }
! grep -q $'\r' "$WORK/partition.log" "$WORK/server_0.log" || fail "carriage return in a log file"

# scrape PORT OUT: GET /metrics with urllib (10 s deadline); the body to OUT, checked as
# Prometheus text (content type, every sample line NAME{LABELS} VALUE of a declared family).
scrape() {
  timeout 30 python3 - "$1" "$2" <<'PY' || fail "scrape of port $1 failed"
import re, sys, urllib.request
port, out = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
    assert r.status == 200, r.status
    ctype = r.headers.get("Content-Type", "")
    assert ctype.startswith("text/plain; version=0.0.4"), ctype
    body = r.read().decode()
declared = set()
sample = re.compile(r'^([a-z_]+)\{([a-z_]+="(?:[^"\\]|\\.)*",?)*\} (\S+)$')
for line in body.splitlines():
    if line.startswith("# TYPE "):
        declared.add(line.split()[2])
        continue
    if line.startswith("#") or not line:
        continue
    m = sample.match(line)
    assert m, f"not a sample line: {line!r}"
    name = m.group(1)
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    assert name in declared or base in declared, f"{name} before its # TYPE"
    float(m.group(3))
open(out, "w").write(body)
PY
}

# metric FILE NAME [LABEL_FILTER]: the value of the first sample of NAME (with the filter).
metric() {
  python3 - "$@" <<'PY'
import re, sys
path, name = sys.argv[1], sys.argv[2]
want = sys.argv[3] if len(sys.argv) > 3 else ""
for line in open(path):
    if line.startswith(name + "{") and want in line:
        print(float(line.rsplit(" ", 1)[1]))
        sys.exit(0)
sys.exit(f"{name} {want} not in {path}")
PY
}

for k in 0 1; do scrape "${PORTS[$k]}" "$WORK/before_$k.prom"; done
before=$(metric "$WORK/before_0.prom" graphshard_batches_built_total)
before_hist=$(metric "$WORK/before_0.prom" graphshard_batch_build_seconds_count)
grep -q '^graphshard_peer_cache_hit_rate{part="0",replica="0"}' "$WORK/before_0.prom" ||
  { show "$WORK/before_0.prom"; fail "no peer cache metrics from a server with a cache"; }

# The live view while batches stream: batch_digest in a loop until graphshard-stats is done.
timeout 60 "$BIN/graphshard-stats" --registry "$REG" --interval-s 1 --count 4 \
  >"$WORK/stats.out" 2>"$WORK/stats.err" &
stats_pid=$!
streams=0
while kill -0 "$stats_pid" 2>/dev/null; do
  timeout 60 "$BIN/batch_digest" --servers "$SERVERS" --epochs 2 --fanouts 10,5 \
    >>"$WORK/digest.out" 2>&1 || { show "$WORK/digest.out"; fail "batch_digest failed"; }
  streams=$((streams + 1))
done
wait_pid "$stats_pid" 5
show "$WORK/stats.out"
[[ $WAIT_STATUS == 0 ]] || { show "$WORK/stats.err"; fail "graphshard-stats exit $WAIT_STATUS (all servers up)"; }
note "$streams batch_digest runs during the live view"
python3 - "$WORK/stats.out" <<'PY' || fail "graphshard-stats output"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 8, f"{len(lines)} lines, want 4 rounds x 2 servers"
line = re.compile(r"^\d\d:\d\d:\d\d part (\d) 127\.0\.0\.1:\d+ streams \d+ batches_per_s (\S+) "
                  r"build_p50_ms (\S+) build_p99_ms (\S+) out_mb_per_s (\S+) out_mb (\S+) "
                  r"peer_mb_per_s (\S+) peer_mb (\S+) peer_rounds_per_batch (\S+) "
                  r"rows_out_per_s \S+ rows_out_mb \S+ cache_hit (\S+)$")
busy = cached = peer = rounds = 0
for l in lines:
    m = line.match(l)
    assert m, f"unexpected line: {l!r}"
    rate, p50, p99 = m.group(2), m.group(3), m.group(4)
    # batches_per_s counts batches sent, the quantiles batches built in the interval: a batch
    # built in one interval may go out in the next (read-ahead), so a busy line may have none.
    if float(rate) > 0 and p50 != "n/a":
        busy += 1
        assert 0 < float(p50) <= float(p99), l
    if m.group(7) != "n/a" and float(m.group(7)) > 0:
        peer += 1
    if m.group(9) != "n/a" and float(m.group(9)) > 0:
        rounds += 1
        assert float(m.group(9)) <= 3, l  # 2 hops + the gather, at most
    if m.group(10) != "n/a":
        cached += 1
        assert 0 <= float(m.group(10)) <= 1, l
assert [line.match(l).group(1) for l in lines] == ["0", "1"] * 4, "one line per server per round"
assert busy >= 2, f"only {busy} lines saw batches built"
# Isolated peers with a 1 MiB cache: remote rows cross the network, some from the cache.
assert peer >= 2, f"only {peer} lines saw peer traffic"
assert cached >= 2, f"only {cached} lines had cache lookups"
assert rounds >= 2, f"only {rounds} lines saw round trips to the other part"
PY

for k in 0 1; do scrape "${PORTS[$k]}" "$WORK/after_$k.prom"; done
after=$(metric "$WORK/after_0.prom" graphshard_batches_built_total)
after_hist=$(metric "$WORK/after_0.prom" graphshard_batch_build_seconds_count)
inf=$(metric "$WORK/after_0.prom" graphshard_batch_build_seconds_bucket 'le="+Inf"')
python3 -c "import sys; b, a, hb, ha, inf = map(float, sys.argv[1:]); \
assert a > b, f'batches_built_total {b} -> {a}'; assert ha > hb, f'histogram count {hb} -> {ha}'; \
assert inf == ha, f'+Inf bucket {inf} != count {ha}'" \
  "$before" "$after" "$before_hist" "$after_hist" "$inf" || fail "metrics did not move"
note "part 0: batches_built_total $before -> $after, build histogram count $before_hist -> $after_hist"

# The endpoint's edges: 404, 405, an oversized request, a silent client next to a scrape.
timeout 60 python3 - "${PORTS[0]}" <<'PY' || fail "HTTP endpoint edge cases"
import socket, sys, time, urllib.error, urllib.request
port = int(sys.argv[1])
def status(path, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
assert status("/") == 404, status("/")
assert status("/metricsx") == 404
assert status("/metrics", "POST") == 405
silent = socket.create_connection(("127.0.0.1", port), timeout=10)  # sends nothing
big = socket.create_connection(("127.0.0.1", port), timeout=10)
big.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 16384 + b"\r\n\r\n")
reply = b""
try:
    while chunk := big.recv(4096):
        reply += chunk
except (ConnectionResetError, BrokenPipeError):
    pass
assert reply.startswith(b"HTTP/1.1 400"), reply[:80]
t = time.monotonic()
assert status("/metrics") == 200  # answered while the silent client holds its connection
assert time.monotonic() - t < 5
silent.settimeout(30)
t = time.monotonic()
assert silent.recv(1) == b"", "the silent client got data"
waited = time.monotonic() - t
assert waited < 20, f"silent connection held {waited:.1f}s"
print(f"-- silent client closed after {waited:.1f}s", file=sys.stderr)
PY

# A dead address: named in its line, exit 1, no hang.
status=0
start=$SECONDS
timeout 30 "$BIN/graphshard-stats" --servers "$(cat "$REG/part_0"),127.0.0.1:1" --count 1 \
  --interval-s 0.5 >"$WORK/dead.out" 2>&1 || status=$?
show "$WORK/dead.out"
((status == 1)) || fail "graphshard-stats with a dead server: exit $status, want 1"
grep -q '^[0-9:]* part 1 127.0.0.1:1 down: UNAVAILABLE' "$WORK/dead.out" || fail "dead server not named"
grep -q '^[0-9:]* part 0 127.0.0.1:[0-9]* streams' "$WORK/dead.out" || fail "live server missing"
((SECONDS - start < 15)) || fail "graphshard-stats took $((SECONDS - start)) s against a dead address"

# A stopped server (accepts connections, never answers): its call ends at the deadline.
server1=$(pgrep -f -- "^$BIN/graphshard-server --partition $WORK/cora2 --part 1 ")
[[ -n $server1 ]] || fail "cannot find server 1"
kill -STOP "$server1"
status=0
start=$SECONDS
timeout 30 "$BIN/graphshard-stats" --registry "$REG" --parts 3 --count 1 --interval-s 0.5 \
  --timeout-s 1 >"$WORK/stopped.out" 2>&1 || status=$?
kill -CONT "$server1"
show "$WORK/stopped.out"
((status == 1)) || fail "graphshard-stats with a stopped server: exit $status, want 1"
# The kernel accepts the connection; gRPC gives up at the deadline, as DEADLINE_EXCEEDED or (a
# new channel that never got the server's HTTP/2 SETTINGS) UNAVAILABLE.
grep -Eq '^[0-9:]* part 1 127.0.0.1:[0-9]* down: (DEADLINE_EXCEEDED|UNAVAILABLE)' \
  "$WORK/stopped.out" || fail "stopped server not named"
grep -q '^[0-9:]* part 2 - down: NOT_FOUND: not registered' "$WORK/stopped.out" ||
  fail "unregistered part 2 not named"
((SECONDS - start < 10)) || fail "graphshard-stats took $((SECONDS - start)) s with a stopped server"

# Usage errors: exit 2 naming the problem.
for args in "" "--registry $REG --servers a:1" "--registry $REG --interval-s 0" "--servers x"; do
  status=0
  # shellcheck disable=SC2086
  timeout 10 "$BIN/graphshard-stats" $args >"$WORK/usage.out" 2>&1 || status=$?
  ((status == 2)) || { show "$WORK/usage.out"; fail "graphshard-stats $args: exit $status, want 2"; }
done
status=0
timeout 10 "$BIN/graphshard-server" --partition "$WORK/cora2" --part 0 --metrics-listen nonsense \
  >"$WORK/badlisten.out" 2>&1 || status=$?
((status == 1)) && grep -q "metrics-listen 'nonsense'" "$WORK/badlisten.out" ||
  { show "$WORK/badlisten.out"; fail "a bad --metrics-listen: exit $status"; }

pids=$(pgrep -f -- "graphshard-server --partition $WORK" || true)
# shellcheck disable=SC2086
[[ -z $pids ]] || kill -TERM $pids
note ok
