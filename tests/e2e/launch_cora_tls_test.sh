#!/usr/bin/env bash
# TLS and the job token, end to end with the real binaries (docs/SECURITY.md):
#  1. graphshard-launch --tls self-signed --tls-mutual (a fresh CA, certificates and job token
#     for the run): 2 servers + 2 GraphSAGE trainers train Cora over TLS with the token, the
#     servers asking their peers over gRPC (no bulk port under TLS); then --tls self-signed
#     alone (server certificates only) for 3 epochs.
#  2. One server started by hand with a token file and TLS: graphshard-health without the token,
#     with a wrong one, and over plaintext is refused; with both it passes. A token file others
#     may read is refused at start, naming its mode.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer

partition_cora "$WORK/cora2"
note "launching 2 servers + 2 trainers with --tls self-signed --tls-mutual"
status=0
timeout 400 "$LAUNCH" --partition "$WORK/cora2" --servers 2 --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/registry" --server-wait-s 60 --tls self-signed --tls-mutual -- \
  --model sage --epochs 10 --eval-every 5 --seed 1 >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
show "$WORK/stdout"
show "$WORK/stderr"
((status == 0)) || fail "graphshard-launch --tls self-signed exited with status $status"
expect_summary "$WORK/stdout" 0.6 2
grep -q "security: job token .*, TLS self-signed (mutual)" "$WORK/stderr" ||
  fail "the launcher did not announce the token and TLS"
grep -q "serving at .* (job token, mutual TLS)" "$WORK/stderr" ||
  fail "the servers did not report token and mutual TLS"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"

# Server certificates only (no --tls-mutual): trainers, peers and the trainers' rendezvous
# store verify the servers' certificates and show the token; nobody needs a client certificate.
note "launching 2 servers + 2 trainers with --tls self-signed (not mutual)"
status=0
timeout 300 "$LAUNCH" --partition "$WORK/cora2" --servers 2 --trainers 2 --bin-dir "$BIN" \
  --registry "$WORK/registry_tls" --server-wait-s 60 --tls self-signed -- \
  --model sage --epochs 3 --eval-every 3 --seed 1 >"$WORK/stdout1" 2>"$WORK/stderr1" || status=$?
((status == 0)) || { show "$WORK/stderr1"; fail "graphshard-launch --tls self-signed (not mutual) exited with status $status"; }
expect_summary "$WORK/stdout1" 0.3 2
grep -q "security: job token .*, TLS self-signed" "$WORK/stderr1" ||
  { show "$WORK/stderr1"; fail "the launcher did not announce TLS"; }
grep -q "(mutual)" "$WORK/stderr1" && { show "$WORK/stderr1"; fail "mutual TLS without --tls-mutual"; }
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"

note "one server by hand: who the health check lets in"
"$SRC/deploy/graphshard-certs" --out "$WORK/tls" >/dev/null || fail "graphshard-certs failed"
(umask 077 && echo "e2e-token-0123456789abcdef0123456789" >"$WORK/token")
(umask 077 && echo "e2e-token-0123456789abcdef012345678X" >"$WORK/wrong")
tls=(--tls-ca "$WORK/tls/ca.pem" --tls-server-name graphshard-server)
timeout 120 "$BIN/graphshard-server" --partition "$WORK/cora2" --part 0 --listen 127.0.0.1:0 \
  --registry "$WORK/reg1" --token-file "$WORK/token" "${tls[@]}" --tls-cert "$WORK/tls/node.pem" \
  --tls-key "$WORK/tls/node.key" 2>"$WORK/server.err" &
server=$!
wait_for_file "$WORK/reg1/part_0" 30 || { show "$WORK/server.err"; fail "server did not register"; }
health() { timeout 30 "$BIN/graphshard-health" --registry "$WORK/reg1" --parts 1 --timeout-s 2 "$@"; }
health --token-file "$WORK/token" "${tls[@]}" 2>"$WORK/h_ok.err" ||
  { show "$WORK/h_ok.err"; fail "health with the token over TLS failed"; }
health "${tls[@]}" 2>"$WORK/h_none.err" && fail "health without the token passed"
grep -q "job token" "$WORK/h_none.err" || { show "$WORK/h_none.err"; fail "no token: why?"; }
health --token-file "$WORK/wrong" "${tls[@]}" 2>"$WORK/h_wrong.err" && fail "a wrong token passed"
grep -q "job token" "$WORK/h_wrong.err" || { show "$WORK/h_wrong.err"; fail "wrong token: why?"; }
health --token-file "$WORK/token" 2>"$WORK/h_plain.err" && fail "a plaintext client passed"
grep -q -- "speaks plaintext: if the servers use TLS, pass their CA with --tls-ca" \
  "$WORK/h_plain.err" || { show "$WORK/h_plain.err"; fail "plaintext client: no hint at --tls-ca"; }
kill -TERM "$server"
wait "$server" || fail "the server did not stop cleanly"

chmod 644 "$WORK/token"
status=0
timeout 60 "$BIN/graphshard-server" --partition "$WORK/cora2" --part 0 --listen 127.0.0.1:0 \
  --token-file "$WORK/token" 2>"$WORK/open.err" || status=$?
((status == 1)) || fail "a token file of mode 0644 gave status $status, expected 1"
grep -q "mode 0644" "$WORK/open.err" || { show "$WORK/open.err"; fail "the refusal does not name the mode"; }
note ok
