#ifndef GRAPHSHARD_SERVER_GRPC_OPTIONS_H_
#define GRAPHSHARD_SERVER_GRPC_OPTIONS_H_

#include <cstdint>

namespace graphshard::server {

// gRPC's default receive limit is 4 MB; a [15,10,5] batch of 1024 seeds on an ogbn-products-like
// graph carries ~121 MB of features. Both ends allow 1 GiB per message; requests beyond the
// engine's Limits are refused before they get near it.
inline constexpr int kMaxMessageBytes = 1 << 30;

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_GRPC_OPTIONS_H_
