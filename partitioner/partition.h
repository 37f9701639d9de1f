#ifndef GRAPHSHARD_PARTITIONER_PARTITION_H_
#define GRAPHSHARD_PARTITIONER_PARTITION_H_

// Writes a partition folder (DESIGN.md, "Partition folder") from an in-memory homogeneous graph:
// node type "node", edge type "node__to__node".
//
// What the folder holds, for part k of K:
//   - part k owns global (new) ids [offsets[k], offsets[k+1]); nodes keep their original
//     relative order within a part; orig_id.npy maps a row back to the input id;
//   - nodes/node/{feat.npy float32 [n, F], label.npy int64 [n], orig_id.npy int64 [n]};
//   - edges/node__to__node/: every input edge is stored exactly once, with the part owning its
//     destination, as CSC: indptr.npy int64 [n + 1], indices.npy int64 [e] (global new source
//     ids, ascending within each destination; ties by edge id), edge_id.npy int64 [e] (the
//     edge's index in InputGraph::src/dst);
//   - splits/node/{train,val,test}.npy int64: ascending global new ids owned by part k.
// The manifest lists every file with dtype, shape and CRC-32; PartitionPart::Load accepts
// every part. Output is a deterministic function of (graph, options): same inputs give
// byte-identical files.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/manifest.h"
#include "partitioner/input_graph.h"

namespace graphshard::partitioner {

struct PartitionOptions {
  int num_parts = 1;
  std::string method = "random";  // only "random" for now
  uint64_t seed = 0;
  // Replace an existing `out` folder. Without it, an existing `out` is InvalidArgument.
  bool force = false;
};

// Which part each input node goes to ([num_nodes], values in [0, num_parts)). "random": a
// seeded shuffle cut into num_parts near-equal pieces (sizes differ by at most one).
// InvalidArgument for an unknown method or num_parts < 1 or > num_nodes (when num_nodes > 0).
absl::StatusOr<std::vector<int>> AssignParts(const InputGraph& graph,
                                             const PartitionOptions& options);

// Partitions `graph` and writes the folder to `out`, atomically: everything goes to
// `out`.tmp-<pid> first and is renamed at the end; on any error nothing is left at `out` (or
// the old `out` is untouched). Returns the manifest written.
// InvalidArgument (bad graph or options, `out` exists without force), Internal (I/O), each
// naming what and where. Not thread-safe for the same `out`.
absl::StatusOr<common::Manifest> PartitionGraph(const InputGraph& graph,
                                                const PartitionOptions& options,
                                                const std::string& out);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_PARTITION_H_
