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

struct RpcOptions {
  int max_message_bytes = kMaxMessageBytes;  // receive and send limit, both ends
  CredentialsKind credentials = CredentialsKind::kInsecure;
};

}  // namespace graphshard::rpc

#endif  // GRAPHSHARD_RPC_OPTIONS_H_
