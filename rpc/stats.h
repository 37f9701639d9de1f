#ifndef GRAPHSHARD_RPC_STATS_H_
#define GRAPHSHARD_RPC_STATS_H_

// The client side of PartitionService.GetStats, the one place tools fetch a server's counters
// (graphshard-stats): a channel from rpc::MakeChannel (so it carries RpcOptions' credentials)
// and a deadline on every call. Thread-safe: no shared state beyond the channel.

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/graphshard.pb.h"

namespace graphshard::rpc {

// One GetStats call, bounded by `deadline` (a stopped or unreachable server: DeadlineExceeded or
// Unavailable, gRPC's message kept). Fails fast on a refused connection (no wait for ready).
absl::StatusOr<v1::Stats> FetchStats(const std::shared_ptr<grpc::Channel>& channel,
                                     absl::Time deadline);

}  // namespace graphshard::rpc

#endif  // GRAPHSHARD_RPC_STATS_H_
