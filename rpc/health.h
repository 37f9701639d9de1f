#ifndef GRAPHSHARD_RPC_HEALTH_H_
#define GRAPHSHARD_RPC_HEALTH_H_

// The client side of the standard gRPC health protocol (grpc.health.v1.Health/Check, service
// ""), through the generated stub. Used by graphshard-health and the trainer's wait for its
// servers. Thread-safe: no shared state beyond the channel (itself thread-safe).

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace graphshard::rpc {

struct HealthCheckOptions {
  // true: wait (within the deadline) for the channel to connect instead of failing fast on an
  // unreachable server.
  bool wait_for_ready = false;
};

// One Check call, bounded by `deadline`. OK when the server answers SERVING; Unavailable
// "not SERVING (status N)" when it answers another status N; otherwise the call's own
// status (DeadlineExceeded, Unavailable, Unimplemented for a server without the health
// service, ...), its message as gRPC gave it.
absl::Status CheckHealth(const std::shared_ptr<grpc::Channel>& channel, absl::Time deadline,
                         const HealthCheckOptions& options = {});

}  // namespace graphshard::rpc

#endif  // GRAPHSHARD_RPC_HEALTH_H_
