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

absl::StatusOr<Graph> ReadNpyFolder(const std::string& dir);
absl::StatusOr<Graph> ReadNpyHeteroFolder(const std::string& dir);
absl::StatusOr<Graph> ReadOgbHeterogeneous(const std::string& dir, const std::string& split_name);
absl::StatusOr<Graph> ReadEdgeList(const std::string& path, const ReadOptions& options);

// Takes ownership of g's arrays (no copy).
Graph FromInputGraph(InputGraph g);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_READ_INPUT_H_
