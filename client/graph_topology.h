#ifndef GRAPHSHARD_CLIENT_GRAPH_TOPOLOGY_H_
#define GRAPHSHARD_CLIENT_GRAPH_TOPOLOGY_H_

// Reading a homogeneous graph's whole topology (every node's in-edges, as one CSC over global
// ids) and the labels of chosen nodes from the servers that own them: what the trainer's GPU
// sampler holds (trainer/gpu_sampler.h). No Torch. Thread-safe if `client_of` is.

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/data_types.h"
#include "client/feature_rows.h"

namespace graphshard::client {

struct GraphTopology {
  std::vector<int64_t> indptr;  // [num_nodes + 1]: node v's in-edges are [indptr[v], indptr[v+1])
  // [num_edges]: their sources, in the order of v's part's CSC; int32 (the GPU sampler's ids),
  // half the host memory of int64 ids while it is read (3.2 B edges at papers scale 1: 13 GB).
  std::vector<int32_t> indices;
};

// How far a read has come: `report(nodes_done, nodes_total, elapsed)` is called on the calling
// thread every `every` (at least 1 ms) while it goes, and once when it ends (done == total
// unless it failed).
struct TopologyProgress {
  absl::Duration every = absl::Seconds(10);
  std::function<void(int64_t done, int64_t total, absl::Duration elapsed)> report;
};

// Every in-edge of the graph's one edge type, part by part (the target type's part_offsets), at
// most `nodes_per_call` destinations per SampleOneHop (fanout -1), up to `calls_in_flight`
// calls at once (each part's range cut in pieces, one thread each; at least one per part). A call
// the server refuses as too costly (ResourceExhausted: a hub's in-edges) is asked again in
// halves, and the calls after a success double again up to `nodes_per_call`; one that fails
// UNAVAILABLE or DEADLINE_EXCEEDED again of client_of(part) (a live replica; AskLivePart).
// Linear in the edges (tests/bench/topology_read_bench.sh). FailedPrecondition for a graph that
// is not homogeneous (one node type, one edge type) or servers that do not report part
// offsets, or a graph of 2^31 nodes or more; the servers' errors naming them; DataLoss for a
// neighbour id outside the graph.
absl::StatusOr<GraphTopology> ReadTopology(const ServerMetadata& metadata,
                                           const ClientOf& client_of,
                                           int64_t nodes_per_call = 1 << 14,
                                           int calls_in_flight = 16,
                                           const TopologyProgress& progress = {});

// The labels (-1 = unlabelled) of `ids` of the target type, in order (ids of any parts; each
// asked of its owner, at most `per_call` at a time). InvalidArgument for an id outside the
// type; the servers' errors naming them.
absl::StatusOr<std::vector<int64_t>> ReadLabels(const ServerMetadata& metadata,
                                                const ClientOf& client_of,
                                                absl::Span<const int64_t> ids,
                                                int64_t per_call = 1 << 16);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_GRAPH_TOPOLOGY_H_
