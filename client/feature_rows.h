#ifndef GRAPHSHARD_CLIENT_FEATURE_ROWS_H_
#define GRAPHSHARD_CLIENT_FEATURE_ROWS_H_

// Reading every feature row of a node type from the servers that own them, for a client that
// holds the rows itself (the trainer's device feature store, feature_store.h; the Python
// loader's feature_store="device"). No Torch. Thread-safe if `client_of` and `sink` are.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/batch_client.h"
#include "client/data_types.h"

namespace graphshard::client {

// A client of a live server of `part` (e.g. PartDirectory::Live's, or a fixed one).
using ClientOf = std::function<absl::StatusOr<PartitionClient*>(int part)>;

// `call(client)` on client_of(part)'s server, asked again of client_of(part) (a live replica,
// looked up anew) when it fails UNAVAILABLE or DEADLINE_EXCEEDED (its server gone or hung, or a
// server it asks on our behalf). UNAVAILABLE comes fast: up to kLivePartRetries more times,
// after pauses of 50, 100 and 200 ms, so that servers that lost a peer at the same moment have
// found its other replica. DEADLINE_EXCEEDED has already cost a deadline: once more only.
// `call` returns an absl::StatusOr.
inline constexpr int kLivePartRetries = 3;
template <typename Call>
auto AskLivePart(const ClientOf& client_of, int part, const Call& call)
    -> decltype(call(std::declval<PartitionClient&>())) {
  bool timed_out = false;
  for (int retry = 0;; ++retry) {
    absl::StatusOr<PartitionClient*> client = client_of(part);
    if (!client.ok()) return client.status();
    auto result = call(**client);
    const bool unavailable = absl::IsUnavailable(result.status());
    const bool deadline = absl::IsDeadlineExceeded(result.status());
    if ((!unavailable && !deadline) || retry == kLivePartRetries || (deadline && timed_out)) {
      return result;
    }
    timed_out = timed_out || deadline;
    if (unavailable) absl::SleepFor(absl::Milliseconds(50 << retry));
  }
}

// Node type `type`'s rows (metadata.node_types[type]) in `dtype`, part by part (the type's
// part_offsets), `rows_per_call` at a time (GatherFeatures, each on the client's RPC deadline):
// sink(first_row, n, rows) gets rows [first_row, first_row + n) as n x feat_dim x dtype bytes,
// every row once, in order, one call at a time. Up to 8 GatherFeatures calls are in flight on
// their own threads (`client_of` must be thread-safe), each holding one chunk until its turn.
// A call that fails UNAVAILABLE or DEADLINE_EXCEEDED (a server gone) is asked again of
// `client_of(part)` (a live replica, looked up anew), as AskLivePart says. Nothing for a
// type without features. The servers' errors naming them; FailedPrecondition when the servers
// do not report part offsets; the sink's errors.
// `parts`, when not empty ([num_parts]): only the parts p with parts[p] set, and first_row
// counts the rows of those parts only (rows of the parts read, in part order).
absl::Status ReadFeatureRows(
    const ServerMetadata& metadata, int type, FeatureDtype dtype, const ClientOf& client_of,
    int64_t rows_per_call,
    const std::function<absl::Status(int64_t first_row, int64_t n, std::string rows)>& sink,
    const std::vector<bool>& parts = {});

// The part that owns node `id` of a type whose part_offsets are `offsets` ([num_parts + 1],
// ascending; id inside [offsets.front(), offsets.back())).
int PartOfId(absl::Span<const int64_t> offsets, int64_t id);

// Which servers GatherRowsById asks.
struct RowRoute {
  // Parts served on the asker's own host: when not empty, they are asked for the rows of any
  // part (GatherRowsOptions::any_part), chunks spread over them in turn, and fetch what they do
  // not hold from the owners over the servers' data plane (through their hot-row caches, shared
  // by the host's trainers). Empty: each owner is asked directly.
  std::vector<int> gateway_parts;
  std::string client_host_id;  // the asker's host (shm::HostId): same-host answers in shared memory
  int parallel_calls = 8;      // calls in flight at once (at least 1)
};

// The rows of `ids` (any order, repeats allowed, each inside node type `type`'s range) in
// `dtype`, [ids.size(), feat_dim] row-major, in the order of `ids`: GatherFeatures calls to
// the route's gateways, else to each part that owns some of them (at most `rows_per_call` ids
// each, up to route.parallel_calls in flight on their own threads: `client_of` must be
// thread-safe), the part's
// server from `client_of`, asked again of a fresh one when the call fails UNAVAILABLE or
// DEADLINE_EXCEEDED (AskLivePart). The servers' errors naming them; FailedPrecondition
// without part offsets; InvalidArgument for an id outside the type's range.
absl::StatusOr<std::string> GatherRowsById(const ServerMetadata& metadata, int type,
                                           FeatureDtype dtype, const ClientOf& client_of,
                                           absl::Span<const int64_t> ids,
                                           int64_t rows_per_call = 1 << 16,
                                           const RowRoute& route = {});
// As GatherRowsById, into `out` (exactly ids.size() x feat_dim x dtype bytes, e.g. a reused
// page-locked buffer; InvalidArgument otherwise): no buffer made and zeroed per call.
absl::Status GatherRowsByIdInto(const ServerMetadata& metadata, int type, FeatureDtype dtype,
                                const ClientOf& client_of, absl::Span<const int64_t> ids,
                                int64_t rows_per_call, const RowRoute& route,
                                absl::Span<char> out);

// Bytes of every node type's feature rows in `dtype`: what a device feature store holds
// (saturating at INT64_MAX for metadata no store could hold).
int64_t FeatureTableBytes(const ServerMetadata& metadata, FeatureDtype dtype);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_FEATURE_ROWS_H_
