#ifndef GRAPHSHARD_PARTITIONER_TU_DATASET_H_
#define GRAPHSHARD_PARTITIONER_TU_DATASET_H_

// Graph-classification datasets: many small graphs in the TU text format (the layout of the TU
// Dortmund collection that PyG's TUDataset and DGL's GINDataset read), and their form as a
// partitioner Graph.
//
// TU layout, in a folder (or its raw/ subfolder), for a dataset named DS; line i (1-based) of a
// per-node file describes node i, line g of a per-graph file graph g:
//   DS_A.txt                 one edge per line, "i, j" (node ids from 1; i -> j; undirected
//                            graphs list both directions)
//   DS_graph_indicator.txt   per node: the graph it belongs to, 1..G
//   DS_graph_labels.txt      per graph: an integer class (any values; mapped to 0..C-1 in
//                            sorted order, as PyG does)
//   DS_node_labels.txt       optional, per node: integer(s), comma separated; each column
//                            one-hot encoded from its minimum (PyG's TUDataset does the same)
//   DS_node_attributes.txt   optional, per node: floats, comma separated
// Other TU files (edge labels, graph attributes) are ignored.
//
// As a Graph (what `partition` writes): node type "node" (features = attributes, then the
// one-hot node labels; with neither, the one-hot in-degree min(deg, 64), 65 columns, as PyG
// users add with OneHotDegree), node type "graph" (no features; labels; the splits), edge
// types "node__to__node" (the A.txt edges) and "node__in__graph" (every node -> its graph).
// The split is a seeded shuffle of the graphs cut 80/10/10 (DGL's split_dataset: floor(0.8 G)
// train, floor(0.1 G) val, the rest test).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "partitioner/graph.h"

namespace graphshard::partitioner {

inline constexpr char kGraphNodeType[] = "graph";
inline constexpr char kMembershipRelation[] = "in";
inline constexpr int64_t kMaxDegreeFeature = 64;

// A TU dataset in memory, ids from 0.
struct TuDataset {
  std::string name;  // DS
  int64_t num_nodes = 0;
  std::vector<int64_t> src, dst;          // edges
  std::vector<int64_t> graph_of_node;     // [num_nodes], in [0, num_graphs)
  std::vector<int64_t> graph_labels;      // [num_graphs], as in the file
  std::vector<std::vector<int64_t>> node_labels;  // [num_nodes][columns]; empty = none
  int64_t attr_dim = 0;
  std::vector<float> node_attributes;     // [num_nodes, attr_dim]; empty = none
  int64_t num_graphs() const { return static_cast<int64_t>(graph_labels.size()); }
};

// The dataset name DS if `dir` (or `dir`/raw) holds exactly one DS_graph_indicator.txt, with
// the folder it is in; NotFound otherwise (InvalidArgument if several).
struct TuLocation {
  std::string folder;
  std::string name;
};
absl::StatusOr<TuLocation> FindTuDataset(const std::string& dir);

// Reads and checks everything: InvalidArgument "<file>:<line>: <what>" for a malformed line, an
// id out of range, an edge joining two graphs, or a per-node / per-graph file with the wrong
// number of lines; NotFound for a missing required file.
absl::StatusOr<TuDataset> ReadTuDataset(const std::string& dir);

// Writes the files above into `dir` (created; must not exist), atomically.
absl::Status WriteTuDataset(const TuDataset& d, const std::string& dir);

// The Graph form (see the top of this file), splits drawn with `split_seed`. `d` as
// ReadTuDataset or GenerateGraphs return it (ids checked); the consumer validates the Graph.
absl::StatusOr<Graph> GraphFromTu(const TuDataset& d, uint64_t split_seed);

// True for a Graph of that form: node types "node" and "graph" and the edge type
// "node__in__graph" (a graph-classification dataset; `partition` keeps each graph whole).
bool IsGraphDataset(const Graph& g);

// For such a Graph: the graph each node belongs to; InvalidArgument unless every node is in
// exactly one graph.
absl::StatusOr<std::vector<int64_t>> GraphOfNode(const Graph& g);

struct GraphsGenerateOptions {
  uint64_t seed = 0;
  int64_t num_graphs = 1000;
  int64_t min_nodes = 10;
  int64_t max_nodes = 30;
};

// A synthetic two-class dataset (kind "graphs"), IMDB-BINARY-like (no node features): every
// graph has n nodes (uniform in [min_nodes, max_nodes]) and the same number of undirected edges
// for both classes, 2n - 3; class 0 grows by preferential attachment (each new node links to 2
// distinct earlier nodes chosen by degree: hubs), class 1 places those edges uniformly at
// random (no repeats, no self loops). Sizes and edge counts do not reveal the class; the degree
// distribution does, which GIN with sum pooling over one-hot degrees can learn. Classes
// alternate by graph id, so they are balanced. InvalidArgument for sizes out of range
// (num_graphs < 10, min_nodes < 4, max_nodes < min_nodes or > 100000).
absl::StatusOr<TuDataset> GenerateGraphs(const GraphsGenerateOptions& options);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_TU_DATASET_H_
