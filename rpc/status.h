#ifndef GRAPHSHARD_RPC_STATUS_H_
#define GRAPHSHARD_RPC_STATUS_H_

// absl::Status <-> grpc::Status, both directions, every canonical code mapped by name (the two
// libraries number them alike today, but nothing promises it). The message travels unchanged;
// a code outside the canonical set becomes UNKNOWN. Thread-safe: pure functions.

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace graphshard::rpc {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace graphshard::rpc

#endif  // GRAPHSHARD_RPC_STATUS_H_
