#ifndef GRAPHSHARD_PARTITIONER_EDGE_SPLIT_H_
#define GRAPHSHARD_PARTITIONER_EDGE_SPLIT_H_

// Train / val / test splits of one edge type's edges for link prediction (PyG's
// RandomLinkSplit): `partition --edge-split 0.85,0.05,0.10 [--target-edge-type T]`.
//
// What it does to the graph (the choices are in partitioner/README.md, "Edge splits"):
//   - the candidates are the type's distinct edges; within one node type (src type == dst type)
//     an edge and its reverse are one candidate (undirected pair), self loops are no candidate;
//   - they are shuffled with `seed` and cut: round(val * n) val, round(test * n) test, then
//     round(train * n) train (at most what is left; all of it when the fractions add up to 1);
//     the rest is message passing only;
//   - chronological instead (EdgeSplitOrder::kTime, the default for an edge type with times):
//     ordered by (time, src, dst) and cut so that the message-passing-only edges are the
//     earliest, then train, val, and test the latest (a temporal split);
//   - each supervision edge keeps its edge's time (EdgeSplitData::time) when the type has times;
//   - val and test edges are removed from the message-passing edges (both directions within a
//     node type, and the reversed edge from the reverse edge type, below), so evaluation
//     never sees its targets; train edges stay (the sampler leaves a batch's own supervision
//     edges out, server/engine);
//   - EdgeTypeData::splits gets the supervision edges, each once, in the shuffled order.
// Edge ids of the changed types become positions in the new lists (as TransformEdges does).

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "partitioner/graph.h"

namespace graphshard::partitioner {

// How the candidates are cut: kAuto = kTime when the edge type has edge times, else kRandom.
enum class EdgeSplitOrder { kAuto, kRandom, kTime };

struct EdgeSplitOptions {
  double train = 0.85;
  double val = 0.05;
  double test = 0.10;
  uint64_t seed = 0;
  // "<src>__<rel>__<dst>"; empty = the graph's only edge type.
  std::string edge_type;
  // The edge type that holds edge_type's edges reversed (imdb's movie__movie_to_director__
  // director for director__director_to_movie__movie; PyG's RandomLinkSplit rev_edge_types);
  // empty = "<dst>__rev_<rel>__<src>" when the graph has it (what --undirected adds).
  std::string reverse_edge_type;
  EdgeSplitOrder order = EdgeSplitOrder::kAuto;  // --edge-split-order auto|random|time
};

// "auto", "random" or "time"; InvalidArgument naming the text otherwise.
absl::Status ParseEdgeSplitOrder(absl::string_view text, EdgeSplitOrder& out);

// Parses "train,val,test" fractions (each in [0, 1], sum <= 1 + 1e-9). InvalidArgument naming
// the text otherwise.
absl::Status ParseEdgeSplit(absl::string_view text, EdgeSplitOptions& out);

// Validates `g` (ValidateGraph) and applies the split. InvalidArgument naming what is missing:
// an empty edge_type on a graph with several edge types (listing them), an unknown edge type or
// reverse edge type (or one whose node types are not edge_type's swapped),
// bad fractions, a time order on an edge type without times, an edge type that already has
// edge splits, or fewer than one candidate edge.
absl::Status SplitEdges(Graph& g, const EdgeSplitOptions& options);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_EDGE_SPLIT_H_
