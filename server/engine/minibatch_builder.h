#ifndef GRAPHSHARD_SERVER_ENGINE_MINIBATCH_BUILDER_H_
#define GRAPHSHARD_SERVER_ENGINE_MINIBATCH_BUILDER_H_

// Multi-hop neighbour sampling on the server (docs/DESIGN.md, "Data flow"), homogeneous or
// heterogeneous: per hop the frontier of every node type is split by owner and each peer gets
// ONE request covering every edge type, all peers concurrently, the local part answered
// in-process meanwhile; nodes are relabelled per type; features and labels of every node type
// are gathered the same way (one request per peer).

#include "absl/status/statusor.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/engine/types.h"

namespace graphshard::engine {

// Thread-safe if `peers` is; `local` and `peers` must outlive the call. The result is a
// deterministic function of the request (and the partitioned graph). InvalidArgument for an
// empty or oversized batch, duplicate seeds (outside disjoint mode), seeds not owned locally,
// unknown types, bad fanouts or too many hops, temporal sampling without times
// (ValidateTemporal) or with seed_times not one per seed; a peer's error comes back naming the
// part. Temporal sampling builds disjoint trees (PyG forces disjoint=True for it too).
absl::StatusOr<Minibatch> BuildMinibatch(const LocalPart& local, Peers& peers,
                                         const MinibatchRequest& request);

// The fanout of edge type `edge_type` at `hop` under `config` (0 = not sampled); InvalidArgument
// if the config is malformed for `local`'s edge types. Returns the number of hops.
absl::StatusOr<int> ValidateSampling(const LocalPart& local, const SamplingConfig& config);
int32_t FanoutOf(const SamplingConfig& config, const std::string& edge_type, int hop);

// OK unless `config` asks for temporal sampling that cannot run: InvalidArgument, naming the
// missing files, when no edge type of the partition has times, or when seeds of `seed_type`
// have no node times and the request gives none (`seed_times_given`).
absl::Status ValidateTemporal(const LocalPart& local, const SamplingConfig& config,
                              int seed_type, bool seed_times_given);

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_MINIBATCH_BUILDER_H_
