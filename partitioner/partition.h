#ifndef GRAPHSHARD_PARTITIONER_PARTITION_H_
#define GRAPHSHARD_PARTITIONER_PARTITION_H_

// Writes a partition folder (docs/DESIGN.md, "Partition folder") from a Graph (any number of
// node and edge types; a homogeneous graph is node type "node", edge type "node__to__node").
//
// What the folder holds, for part k of K and every node type t:
//   - part k owns global (new) ids [offsets_t[k], offsets_t[k+1]) of type t; nodes keep their
//     original relative order within a part; orig_id.npy maps a row back to the input id;
//   - nodes/<t>/{feat.npy float32 [n, F] ([n, 0] without features), label.npy int64 [n] (-1 =
//     unlabelled; all -1 and num_classes 0 for a type without labels), orig_id.npy int64 [n]};
//   - edges/<src>__<rel>__<dst>/: every input edge is stored exactly once, with the part owning
//     its destination, as CSC: indptr.npy int64 [n_dst + 1], indices.npy int64 [e] (global new
//     source ids, ascending within each destination; ties by edge id), edge_id.npy int64 [e]
//     (the edge's position in its edge type's input list); an edge type with times (its own,
//     or its source type's node times) has time.npy int64 [e] too and is sorted by (time,
//     source, edge id) within each destination instead;
//   - nodes/<t>/time.npy int64 [n] for a type with node times;
//   - splits/<t>/{train,val,test}.npy int64: ascending global new ids owned by part k;
//   - for an edge type with edge splits (edge_split.h): edge_splits/<etype>/{train,val,test}.npy
//     int64 [2, n] (sources, then destinations owned by part k, new ids) and dst_degree.npy
//     int64 [destination type's nodes] (training in-degrees, the same in every part).
// The manifest lists every file with dtype, shape and CRC-32; PartitionPart::Load accepts
// every part. Output is a deterministic function of (graph, options): same inputs give
// byte-identical files (METIS included: fixed seed, single thread).

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/manifest.h"
#include "partitioner/graph.h"

namespace graphshard::partitioner {

// PartitionOptions::stream_passes unless set. Starting from random parts, the first passes
// mostly break the symmetry: on the generated graphs measured (partitioner/README.md,
// "Methods") the cut after 4 passes was still 49-63% (random 75%), and the passes settled after
// 12-20 into 4 parts and 31 or more into 16.
inline constexpr int kDefaultStreamPasses = 32;

struct PartitionOptions {
  int num_parts = 1;
  std::string method = "random";  // "random", "metis" or "stream"
  uint64_t seed = 0;
  // Replace an existing `out` folder. Without it, an existing `out` is InvalidArgument.
  bool force = false;
  // NaN or Inf in a feature row is InvalidArgument naming the node type, input row and column
  // (a model trained on it only learns `loss nan`); true keeps such values as they are.
  bool allow_nonfinite = false;
  // Worker threads for the edge passes and the feature rows (0 = the machine's hardware
  // threads). The output does not depend on it.
  int threads = 0;
  // "stream": the most restreaming passes over the edges (>= 1; each is one scan of every edge
  // and one walk over the nodes); fewer when a pass moves at most 0.1% of the nodes (settled).
  // Other methods ignore it.
  int stream_passes = kDefaultStreamPasses;
  // Progress lines of long steps (with ETA); nullptr = silent. The CLI passes stderr, and says
  // whether it is a terminal (lines redrawn in place) or not (a line every progress_every_s).
  std::ostream* log = nullptr;
  bool log_is_terminal = false;
  double progress_every_s = 10;
};

// METIS (libmetis 5.1) uses 32-bit idx_t: graphs with this many directed edges or more, or whose
// symmetrised adjacency has this many entries or more, are refused (use "stream" or "random").
inline constexpr int64_t kMetisMaxEdges = int64_t{1} << 31;

// Which part each node goes to: [node type][node] -> part in [0, num_parts).
//   "random": per node type, a seeded shuffle cut into num_parts near-equal pieces (sizes
//     differ by at most one);
//   "metis": METIS_PartGraphKway on the homogeneous view (all types, all relations, made
//     symmetric, self loops and repeats dropped), with one vertex-weight constraint per
//     (node type, in train split or not) and one for in-degree, so that training nodes, nodes
//     of each type and stored in-edges are balanced (DistDGL's balance_ntypes/balance_edges).
//     Needs the whole symmetric adjacency in memory (about 8 bytes per directed edge, then
//     METIS' own copies);
//   "stream": the random assignment refined by up to stream_passes passes of restreaming linear
//     deterministic greedy (internal/stream_partition.h) on the same homogeneous view: each
//     pass scans the edges counting every node's neighbours per part, then walks the nodes
//     moving each to the part with most neighbours, discounted by that part's fill;
//     hard caps keep every (node type, in train split or not) class within 5% (plus one node)
//     of even. Memory 4 x num_parts bytes per node, nothing per edge; no size limit.
// A graph-classification dataset (tu_dataset.h, IsGraphDataset) is cut by whole graphs: the
// graphs as "random" cuts a type, every node with its graph ("metis" and "stream" are
// InvalidArgument). num_parts 1 puts everything in part 0 for every method.
// `graph` must have passed ValidateGraph (PartitionGraph, the public entry, validates it once
// and then calls this). InvalidArgument for an unknown method, num_parts < 1 or > total nodes
// (when > 0), stream_passes < 1 with "stream", or a graph too large for METIS (the message
// suggests --method stream or random); Internal if METIS fails. All three methods give the same
// result for any `threads`.
absl::StatusOr<std::vector<std::vector<int>>> AssignGraphParts(const Graph& graph,
                                                               const PartitionOptions& options);

// Partitions `graph` and writes the folder to `out`, atomically: everything goes to
// `out`.tmp-<pid> first and is renamed at the end; on any error nothing is left at `out` (or
// the old `out` is untouched). Features are streamed part by part, mmap'ed inputs are released
// behind each pass, and edges are bucketed one part at a time, so memory stays near the largest
// part's edges plus the input's node-sized arrays. Returns the manifest written.
// InvalidArgument (bad graph or options, `out` exists without force), Internal (I/O), each
// naming what and where. Not thread-safe for the same `out`.
absl::StatusOr<common::Manifest> PartitionGraph(const Graph& graph, const PartitionOptions& options,
                                                const std::string& out);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_PARTITION_H_
