#ifndef GRAPHSHARD_PARTITIONER_INPUT_GRAPH_H_
#define GRAPHSHARD_PARTITIONER_INPUT_GRAPH_H_

// A homogeneous input graph held in memory, as read from an OGB raw folder (or generated), and
// the reader for OGB's raw layout:
//   <dir>/raw/{edge,num-node-list,num-edge-list,node-feat,node-label}.csv.gz
//   <dir>/split/<name>/{train,valid,test}.csv.gz
// All files are gzip-compressed, headerless CSV (tests/data/cora is an example).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphshard::partitioner {

// Edge e is src[e] -> dst[e]; e is its edge id (what the partition's edge_id.npy stores).
struct InputGraph {
  int64_t num_nodes = 0;
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  int64_t feat_dim = 0;
  std::vector<float> features;  // row-major [num_nodes, feat_dim]
  std::vector<int64_t> labels;  // [num_nodes]; -1 = unlabelled
  int64_t num_classes = 0;      // 1 + the largest label (0 if none)
  // "train", "val", "test" -> node ids (OGB's "valid" is stored as "val"). Each id at most once.
  std::map<std::string, std::vector<int64_t>> splits;

  int64_t num_edges() const { return static_cast<int64_t>(src.size()); }
};

// Checks the invariants above (sizes, ids in range, labels in [-1, num_classes), split ids in
// range and not repeated). InvalidArgument saying which field is wrong.
absl::Status ValidateInputGraph(const InputGraph& graph);

// Adds the inverse of every edge and drops repeats: the result lists the original edges in
// order, then the reversed ones (edge E + i is the inverse of edge i), and then removes every
// edge equal to one earlier in that list (so self loops and edges already present in both
// directions appear once) and compacts. Edge ids are positions in the resulting list.
// For an input with each undirected edge once and no self loops (OGB, Cora), edge i < E is
// input row i and edge E + i is row i reversed.
void MakeUndirected(InputGraph& graph);

struct OgbReadOptions {
  // Split folder under <dir>/split/; empty = the only folder there (error if several).
  std::string split_name;
  // Apply MakeUndirected after reading (OGB's loaders do this for undirected datasets).
  bool undirected = false;
};

// Reads the homogeneous OGB raw layout. Labels may be "nan" or negative for unlabelled nodes.
// Errors name the file and, for bad content, the 1-based line:
//   NotFound (missing file or split folder), InvalidArgument (a bad number, a node id outside
//   [0, num_nodes), wrong row count or column count, several split folders and no split_name).
// Not thread-safe with respect to concurrent writers of `dir`; otherwise no shared state.
absl::StatusOr<InputGraph> ReadOgbHomogeneous(const std::string& dir,
                                              const OgbReadOptions& options = {});

// Writes `graph` in the layout ReadOgbHomogeneous reads, with split folder `split_name`; edges
// are written as they are (callers write each undirected edge once, as OGB does). `dir` must
// not exist; the folder is written as `dir`.tmp-<pid> and renamed, so a failure leaves no `dir`.
// InvalidArgument (bad graph, `dir` exists), Internal (I/O), naming the path.
absl::Status WriteOgbHomogeneous(const InputGraph& graph, const std::string& dir,
                                 const std::string& split_name = "random");

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_INPUT_GRAPH_H_
