#ifndef GRAPHSHARD_CLIENT_FEATURE_ROWS_H_
#define GRAPHSHARD_CLIENT_FEATURE_ROWS_H_

// Reading every feature row of a node type from the servers that own them, for a client that
// holds the rows itself (the trainer's device feature store, feature_store.h; the Python
// loader's feature_store="device"). No Torch. Thread-safe if `client_of` and `sink` are.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/batch_client.h"
#include "client/data_types.h"

namespace graphshard::client {

// A client of a live server of `part` (e.g. PartDirectory::Live's, or a fixed one).
using ClientOf = std::function<absl::StatusOr<PartitionClient*>(int part)>;

// Node type `type`'s rows (metadata.node_types[type]) in `dtype`, part by part (the type's
// part_offsets), `rows_per_call` at a time (GatherFeatures, each on the client's RPC deadline):
// sink(first_row, n, rows) gets rows [first_row, first_row + n) as n x feat_dim x dtype bytes,
// every row once, in order. A call that fails UNAVAILABLE or DEADLINE_EXCEEDED (a server gone)
// is asked once more of `client_of(part)` again (a live replica, looked up anew). Nothing for a
// type without features. The servers' errors naming them; FailedPrecondition when the servers
// do not report part offsets; the sink's errors.
absl::Status ReadFeatureRows(
    const ServerMetadata& metadata, int type, FeatureDtype dtype, const ClientOf& client_of,
    int64_t rows_per_call,
    const std::function<absl::Status(int64_t first_row, int64_t n, std::string rows)>& sink);

// Bytes of every node type's feature rows in `dtype`: what a device feature store holds
// (saturating at INT64_MAX for metadata no store could hold).
int64_t FeatureTableBytes(const ServerMetadata& metadata, FeatureDtype dtype);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_FEATURE_ROWS_H_
