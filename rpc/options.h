#ifndef GRAPHSHARD_RPC_OPTIONS_H_
#define GRAPHSHARD_RPC_OPTIONS_H_

// The settings every graphshard channel and server port is made from (rpc/channel.h), as a
// plain struct without gRPC types, so that option structs (the trainer's ClientOptions) can hold
// one without including grpcpp.

#include <string>

namespace graphshard::rpc {

// gRPC's default receive limit is 4 MB; a [15,10,5] batch of 1024 seeds on an ogbn-products-like
// graph carries ~121 MB of features. Both ends allow 1 GiB per message; requests beyond the
// engine's Limits are refused before they get near it.
inline constexpr int kMaxMessageBytes = 1 << 30;

// How channels and servers secure their connections (docs/SECURITY.md): plaintext, or TLS with
// the certificates of TlsOptions. Independent of the job token (RpcOptions::token).
enum class CredentialsKind { kInsecure, kTls };

// PEM contents (not paths: rpc/security.h reads the files once, when flags are parsed).
struct TlsOptions {
  std::string ca_pem;    // roots: clients verify servers with it; servers verify client certs
  std::string cert_pem;  // this process's certificate chain (servers; clients with `mutual`)
  std::string key_pem;   // its private key
  // Servers require and verify a client certificate signed by ca_pem; clients present theirs.
  bool mutual = false;
  // The name clients expect in server certificates ("" = the host of the address dialled).
  // The launcher's per-job certificates all carry one name (docs/SECURITY.md).
  std::string server_name;
};

// Liveness of connections (docs/DEPLOY.md, "Failure model"): a channel pings its server after
// keepalive_time_ms without traffic (also with no call in flight) and closes the connection
// when a ping goes unanswered for keepalive_timeout_ms, failing its calls with UNAVAILABLE; a
// stopped (SIGSTOP) or unreachable server is so noticed within their sum even while a stream
// waits for its next message. Servers ping their clients alike and accept pings this often.
inline constexpr int kMinKeepaliveMs = 500;

struct RpcOptions {
  int max_message_bytes = kMaxMessageBytes;  // receive and send limit, both ends
  CredentialsKind credentials = CredentialsKind::kInsecure;
  TlsOptions tls;  // with CredentialsKind::kTls
  // The job token: "" = none (calls carry none, servers ask for none). Otherwise every call
  // carries it ("authorization: Bearer <token>") and servers refuse calls without it with
  // UNAUTHENTICATED, on every service (health and reflection included).
  std::string token;
  int keepalive_time_ms = 15000;
  int keepalive_timeout_ms = 15000;
};

// Keepalive settings under which a dead peer is noticed within `stall_timeout_s` (half of it
// idle, half waiting for the ping's answer; at least kMinKeepaliveMs each).
inline RpcOptions LivenessOptions(double stall_timeout_s, RpcOptions base = {}) {
  const double half_ms = stall_timeout_s * 500;
  const int ms = half_ms < kMinKeepaliveMs ? kMinKeepaliveMs
                 : half_ms > 3.6e6       ? 3600000
                                         : static_cast<int>(half_ms);
  base.keepalive_time_ms = ms;
  base.keepalive_timeout_ms = ms;
  return base;
}

}  // namespace graphshard::rpc

#endif  // GRAPHSHARD_RPC_OPTIONS_H_
