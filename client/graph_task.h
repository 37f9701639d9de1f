#ifndef GRAPHSHARD_CLIENT_GRAPH_TASK_H_
#define GRAPHSHARD_CLIENT_GRAPH_TASK_H_

// Graph classification (--task graph) over a partitioned TU dataset (partitioner/tu_dataset.h):
// node types "node" and "graph", edge types "node__to__node" and "node__in__graph", labels on
// "graph". A minibatch streamed with seed type "graph" and fanouts [-1, -1] is a batch of whole
// graphs: hop 1 takes every node of each seed graph (node__in__graph), hop 2 every edge into
// those nodes (node__to__node; all within the same graph). The graph block's rows are the
// batch's graphs, the node__in__graph edges give each node's graph (PyG's `batch` vector), and
// the node__to__node edges form the block-diagonal edge index. No Torch here.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "client/data_types.h"

namespace graphshard::client {

inline constexpr char kGraphType[] = "graph";
inline constexpr char kGraphNodeType[] = "node";
inline constexpr char kGraphEdgeType[] = "node__to__node";
inline constexpr char kMembershipEdgeType[] = "node__in__graph";

// The fanouts that make a sampled minibatch a batch of whole graphs.
inline std::vector<int32_t> WholeGraphFanouts() { return {-1, -1}; }

// Indexes into ServerMetadata::node_types / edge_types (= a batch's blocks).
struct GraphTaskLayout {
  int node_type = 0;
  int graph_type = 0;
  int edge_type = 0;
  int membership = 0;
};

// True if the partition is a graph-classification dataset (has the membership edge type).
bool IsGraphDataset(const ServerMetadata& md);

// FailedPrecondition naming what is missing unless `md` is a graph-classification dataset with
// labels on "graph" (the target type) and features on "node".
absl::StatusOr<GraphTaskLayout> FindGraphTask(const ServerMetadata& md);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_GRAPH_TASK_H_
