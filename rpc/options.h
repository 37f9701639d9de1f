#ifndef GRAPHSHARD_RPC_OPTIONS_H_
#define GRAPHSHARD_RPC_OPTIONS_H_

// The settings every graphshard channel and server port is made from (rpc/channel.h), as a
// plain struct without gRPC types, so that option structs (the trainer's ClientOptions) can hold
// one without including grpcpp.

namespace graphshard::rpc {

// gRPC's default receive limit is 4 MB; a [15,10,5] batch of 1024 seeds on an ogbn-products-like
// graph carries ~121 MB of features. Both ends allow 1 GiB per message; requests beyond the
// engine's Limits are refused before they get near it.
inline constexpr int kMaxMessageBytes = 1 << 30;

// How channels and servers authenticate. Only plaintext for now; TLS (DESIGN.md, "Trust and
// failure") becomes a second kind here, with its certificate paths in RpcOptions.
enum class CredentialsKind { kInsecure };

// Liveness of connections (docs/DEPLOY.md, "Failure model"): a channel pings its server after
// keepalive_time_ms without traffic (also with no call in flight) and closes the connection
// when a ping goes unanswered for keepalive_timeout_ms, failing its calls with UNAVAILABLE; a
// stopped (SIGSTOP) or unreachable server is so noticed within their sum even while a stream
// waits for its next message. Servers ping their clients alike and accept pings this often.
inline constexpr int kMinKeepaliveMs = 500;

struct RpcOptions {
  int max_message_bytes = kMaxMessageBytes;  // receive and send limit, both ends
  CredentialsKind credentials = CredentialsKind::kInsecure;
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
