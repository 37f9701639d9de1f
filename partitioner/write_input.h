#ifndef GRAPHSHARD_PARTITIONER_WRITE_INPUT_H_
#define GRAPHSHARD_PARTITIONER_WRITE_INPUT_H_

// Writers of the input layouts that read_input.h reads (used by `generate`). Both validate the
// graph, refuse an existing `dir` and write atomically (`dir`.tmp-<pid>, then rename).
// InvalidArgument (bad graph, `dir` exists), Internal (I/O), naming the path.

#include <string>

#include "absl/status/status.h"
#include "partitioner/graph.h"

namespace graphshard::partitioner {

// OGB's homogeneous raw layout (what ReadOgbHomogeneous reads), with split folder `split_name`;
// edges are written as they are (callers write each undirected edge once, as OGB does); a graph
// without labels gets -1 for every node. InvalidArgument also for a graph of several node or
// edge types.
absl::Status WriteOgbHomogeneous(const Graph& g, const std::string& dir,
                                 const std::string& split_name = "random");

// OGB's heterogeneous raw layout (as ogbn-mag); splits under split/<split_name>/<type>/.
absl::Status WriteOgbHeterogeneous(const Graph& g, const std::string& dir,
                                   const std::string& split_name = "random");

// A .npy folder: the homogeneous names (edge_index.npy, x.npy, ...) for a graph with node type
// "node" and edge type "node__to__node", else the heterogeneous scheme (README.md); node and
// edge times as node_time[__<t>].npy and edge_time[__<et>].npy. The OGB writers drop times.
absl::Status WriteNpyInput(const Graph& g, const std::string& dir);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_WRITE_INPUT_H_
