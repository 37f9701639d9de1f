#ifndef GRAPHSHARD_PARTITIONER_GENERATE_H_
#define GRAPHSHARD_PARTITIONER_GENERATE_H_

// Synthetic input graphs with learnable labels, deterministic from a seed.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "partitioner/graph.h"
#include "partitioner/tu_dataset.h"

namespace graphshard::partitioner {

struct GenerateOptions {
  // "products" (homogeneous), "mag" (heterogeneous), "graphs" or "ratings" (temporal)
  std::string kind = "products";
  uint64_t seed = 0;
  int64_t num_nodes = 20000;  // mag: papers; ratings: users
  int64_t num_items = 0;      // ratings: items (0 = max(20, users / 2))
  int64_t time_horizon = 1000;  // ratings: times are 0 .. time_horizon - 1 (days, say)
  double avg_degree = 10;     // products: 2 * undirected edges / nodes; ratings: per user
  int64_t num_edges = 0;      // products: undirected edges if > 0 (overrides avg_degree)
  int64_t num_features = 32;
  int64_t num_classes = 8;
  GraphsGenerateOptions graphs;  // kind "graphs" (tu_dataset.h)
};

// An ogbn-products-like homogeneous graph:
//   - planted communities: each node gets a uniformly random class, its community;
//   - num_nodes * avg_degree / 2 undirected edges, each stored once (src, dst random order),
//     no self loops, no repeats; one endpoint drawn by Chung-Lu popularity w = rank^-0.5 (a
//     random rank per node, giving a power-law degree tail of exponent about 3), the other
//     from the same community with probability 0.8 (by the same weights), else from all nodes;
//   - features: class centroid (N(0,1) per dimension) + N(0, s^2) noise with s = sqrt(F / 2):
//     a node's own features separate classes only modestly, while averaging over neighbours,
//     80% of which share the class, shrinks the noise. Measured on the defaults (seed 3),
//     nearest-centroid test accuracy is 52% on own features and 78% on
//     (own + mean of neighbours) / 2, so an MLP stays modest and a GNN gains a lot;
//   - labels = class; split: a random 60 / 20 / 20 train / val / test.
// Same options give the same graph on every machine (SplitMix64 streams, no platform RNG).
// InvalidArgument for an unknown kind or sizes out of range (num_nodes < 2, num_classes < 2
// or > num_nodes, num_features < 1, avg_degree <= 0 or > (num_nodes - 1) / 2).
// The result is homogeneous (node type "node", edge type "node__to__node").
absl::StatusOr<Graph> Generate(const GenerateOptions& options);

// ogbn-products' shape: 2,449,029 nodes, 61,859,140 undirected edges, 100 features, 47 classes.
GenerateOptions ProductsFullScale(uint64_t seed);
// ogbn-mag's sizes: 736,389 papers (and in GenerateMag's proportions about 1.13 M authors,
// 8.7 k institutions, 60 k fields of study: 1.94 M nodes), 128 features, 349 classes.
GenerateOptions MagFullScale(uint64_t seed);

// An ogbn-mag-shaped heterogeneous graph (kind "mag"), sizes in ogbn-mag's proportions to
// num_nodes papers: author 1.54x, institution 0.0119x, field_of_study 0.0814x; edges
// paper-cites-paper 7.36 per paper, author-writes-paper 9.70 per paper, author-affiliated_with-
// institution 0.92 per author, paper-has_topic-field_of_study 10.2 per paper (no repeats). Each
// node of every type gets a class; an edge's second endpoint shares the first's class with
// probability 0.8 (popularity-weighted as for products), so the paper labels (num_classes) are
// learnable from paper features (centroid + noise, num_features) and better from neighbours.
// Only papers have features, labels and a random 60/20/20 split. The result is what PyG's
// ToUndirected makes of it: cites symmetrised, and rev_writes, rev_affiliated_with,
// rev_has_topic added. InvalidArgument for sizes out of range.
absl::StatusOr<Graph> GenerateMag(const GenerateOptions& options);

// A heterogeneous temporal bipartite graph (kind "ratings", temporal): `num_nodes` users,
// `num_items` items, timestamped edges user__rates__item plus their reverse
// item__rev_rates__user (same times, as PyG's ToUndirected), times in [0, time_horizon).
//   - items: a category each (num_classes of them, uniform), a Zipf popularity (weight 1/rank
//     over a random ranking) and a release time uniform in the first half; features =
//     0.7 x the category's centroid + N(0, 1) noise (num_features), plus one column log(weight
//     x items) + N(0, 0.25); label = category; a random 60/20/20 split; node time = release;
//   - users: an early and a late taste (uniform categories) and a sign-up time uniform in the
//     first half; features = 0.3 x the early taste's centroid + N(0, 1) noise; label = late
//     taste; node time = sign-up;
//   - ratings: about avg_degree per user (log-normal activity, at least 2), at times uniform
//     over [sign-up, horizon); each picks a category: the early taste with probability
//     0.85 (1 - d), the late one with 0.85 d (d = the share of the user's active period
//     elapsed: tastes drift), else uniform; then an item of that category by popularity,
//     released by then and not rated before by this user.
// So a user's next items are predictable from the categories of their recent ratings (recent
// more than old ones), and popularity alone ranks them only moderately. Deterministic in
// `seed`. InvalidArgument for sizes out of range.
absl::StatusOr<Graph> GenerateRatings(const GenerateOptions& options);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_GENERATE_H_
