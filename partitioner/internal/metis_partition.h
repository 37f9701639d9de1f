#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_METIS_PARTITION_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_METIS_PARTITION_H_

// METIS k-way partitioning of a Graph's homogeneous view (node types concatenated in order).

#include <cstdint>
#include <ostream>
#include <vector>

#include "absl/status/statusor.h"
#include "partitioner/graph.h"
#include "partitioner/internal/progress.h"

namespace graphshard::partitioner::internal {

struct MetisOptions {
  int num_parts = 2;  // >= 2
  uint64_t seed = 0;  // METIS_OPTION_SEED gets the low 31 bits
  ProgressSink progress = {};  // progress lines (log nullptr = silent)
};

// Part of every node of the homogeneous view ([total nodes]). See AssignGraphParts for the
// graph and weights given to METIS. InvalidArgument if the graph is too large for 32-bit
// idx_t; Internal if METIS reports an error.
absl::StatusOr<std::vector<int>> MetisPartition(const Graph& graph, const MetisOptions& options);

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_METIS_PARTITION_H_
