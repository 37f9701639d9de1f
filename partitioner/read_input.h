#ifndef GRAPHSHARD_PARTITIONER_READ_INPUT_H_
#define GRAPHSHARD_PARTITIONER_READ_INPUT_H_

// Readers of every input layout `partition` accepts, and the detection of which one a path is.
// Layouts (README.md has the details and examples):
//   ogb         <dir>/raw/num-node-list.csv.gz ... (homogeneous OGB raw download)
//   ogb-hetero  <dir>/raw/num-node-dict.csv.gz, triplet-type-list.csv.gz, relations/... (OGB)
//   npy         <dir>/edge_index.npy [+ x.npy, y.npy, {train,val,test}_idx.npy] (PyG np.save)
//   npy-hetero  <dir>/edge_index__<src>__<rel>__<dst>.npy [+ x__<t>.npy, y__<t>.npy,
//               {train,val,test}_idx__<t>.npy, num_nodes.json]
//   tu          <dir>[/raw]/<DS>_A.txt, <DS>_graph_indicator.txt, <DS>_graph_labels.txt [+
//               <DS>_node_labels.txt, <DS>_node_attributes.txt] (graph classification;
//               tu_dataset.h; split 80/10/10 by split_seed)
//   edgelist    a text / CSV file (optionally .gz) of "src dst" rows [+ feature, label, split
//               files given as options]
// .npy inputs are mmap'ed, not copied: the returned Graph keeps the mappings alive.
// Readers check what they parse (numbers, row counts, and where cheap, id ranges) but do not
// run ValidateGraph: the consumer (PartitionGraph, TransformEdges, the writers) does, once.
// Errors name the file and, for text, the 1-based line; .npy problems name the file and the
// index. NotFound (missing file), InvalidArgument (bad content), DataLoss (bad .npy header).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "partitioner/graph.h"

namespace graphshard::partitioner {

struct ReadOptions {
  // "" = detect; else one of the layout names above.
  std::string format;
  // OGB: the split folder under <dir>/split/ ("" = the only one there).
  std::string split_name;
  // tu only: the seed of the 80/10/10 split of the graphs (the CLI passes --seed).
  uint64_t split_seed = 0;
  // edgelist only. num_nodes < 0: 1 + the largest id (or the feature / label row count).
  int64_t num_nodes = -1;
  std::string features;   // .npy float32 [N, F], or text rows of F numbers
  std::string labels;     // .npy int64 [N], or text with one integer per line
  std::string train_idx;  // .npy int64, or text with one id per line; same for val / test
  std::string val_idx;
  std::string test_idx;
};

// The layout name of `path`; NotFound if it does not exist, InvalidArgument (listing what was
// looked for) if it is a folder of no known layout.
absl::StatusOr<std::string> DetectLayout(const std::string& path);

absl::StatusOr<Graph> ReadGraph(const std::string& path, const ReadOptions& options);

struct OgbReadOptions {
  // Split folder under <dir>/split/; empty = the only folder there (error if several).
  std::string split_name;
  // TransformEdges with `undirected` after reading (OGB's loaders do this for undirected
  // datasets): the input rows in order, then the reversed rows, later repeats dropped; for an
  // input with each undirected edge once and no self loops (OGB, Cora), edge i < E is input row
  // i and edge E + i is row i reversed.
  bool undirected = false;
};

// OGB's raw homogeneous layout (tests/data/cora is an example), all files gzip'ed headerless
// CSV:
//   <dir>/raw/{edge,num-node-list,num-edge-list,node-feat,node-label}.csv.gz
//   <dir>/split/<name>/{train,valid,test}.csv.gz
// as node type "node" and edge type "node__to__node". Labels may be "nan" or negative for
// unlabelled nodes (stored as -1; num_classes = 1 + the largest label). Errors name the file
// and, for bad content, the 1-based line: NotFound (missing file or split folder),
// InvalidArgument (a bad number, a node id outside [0, num_nodes), wrong row or column count,
// several split folders and no split_name).
absl::StatusOr<Graph> ReadOgbHomogeneous(const std::string& dir,
                                         const OgbReadOptions& options = {});

absl::StatusOr<Graph> ReadNpyFolder(const std::string& dir);
absl::StatusOr<Graph> ReadNpyHeteroFolder(const std::string& dir);
absl::StatusOr<Graph> ReadOgbHeterogeneous(const std::string& dir, const std::string& split_name);
absl::StatusOr<Graph> ReadEdgeList(const std::string& path, const ReadOptions& options);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_READ_INPUT_H_
