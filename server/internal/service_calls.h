#ifndef GRAPHSHARD_SERVER_INTERNAL_SERVICE_CALLS_H_
#define GRAPHSHARD_SERVER_INTERNAL_SERVICE_CALLS_H_

// What the PartitionService handlers share (partition_service.cc, and the StreamBatches
// handler in partition_service_stream.cc): the key admission counts a call against, byte
// estimates as admission takes them, and the status of a call that ran out of memory.

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace graphshard::server::internal {

// The client an admission is counted against: the connection's peer address.
inline std::string ClientKey(const grpc::ServerContext& context) { return context.peer(); }

// The call's deadline, as the time a queued admission gives up at.
inline absl::Time CallDeadline(const grpc::ServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

// `bytes` (an estimate, possibly huge) as a byte count, saturated at the int64 maximum.
inline int64_t Bytes(double bytes) {
  return bytes >= 9e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(bytes);
}

// RESOURCE_EXHAUSTED for a call whose work threw std::bad_alloc while doing `what`.
inline grpc::Status OutOfMemory(absl::string_view what) {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      absl::StrCat("the server ran out of memory ", what,
                                   " (std::bad_alloc); retry later or ask for less"));
}

}  // namespace graphshard::server::internal

#endif  // GRAPHSHARD_SERVER_INTERNAL_SERVICE_CALLS_H_
