#include "partitioner/generate.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "partitioner/internal/gen_util.h"

namespace graphshard::partitioner {
namespace {

using internal::DrawCumulative;
using internal::Gaussian;
using internal::Shuffle;

constexpr double kIntraFraction = 0.8;
constexpr double kPopularityExponent = 0.5;
constexpr double kNoiseScale = 1.0;

// Independent streams per purpose, so changing how one is used leaves the others alone.
enum Stream : uint64_t { kClasses = 1, kRanks, kEdges, kFeatures, kSplits };

common::SplitMix64 MakeRng(uint64_t seed, Stream s) {
  return common::SplitMix64(common::MixSeed(seed, s));
}

absl::Status CheckOptions(const GenerateOptions& o) {
  if (o.kind != "products") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --kind \"", o.kind, "\" (products, mag)"));
  }
  if (o.num_nodes < 2 || o.num_nodes > (int64_t{1} << 31)) {
    return absl::InvalidArgumentError("--num-nodes must be in [2, 2^31]");
  }
  if (o.num_classes < 2 || o.num_classes > o.num_nodes) {
    return absl::InvalidArgumentError("--num-classes must be in [2, num-nodes]");
  }
  if (o.num_features < 1 || o.num_features > 100000) {
    return absl::InvalidArgumentError("--num-features must be in [1, 100000]");
  }
  if (o.num_edges < 0 || o.num_edges > o.num_nodes * ((o.num_nodes - 1) / 4)) {
    return absl::InvalidArgumentError("--num-edges must be in [0, num-nodes^2 / 4]");
  }
  if (o.num_edges == 0 &&
      (!(o.avg_degree > 0) || o.avg_degree > (static_cast<double>(o.num_nodes) - 1) / 2)) {
    return absl::InvalidArgumentError("--avg-degree must be in (0, (num-nodes - 1) / 2]");
  }
  return absl::OkStatus();
}

struct Edges {
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
};

absl::Status GenerateEdges(const GenerateOptions& o, const std::vector<int64_t>& labels, Edges& g) {
  const int64_t n = o.num_nodes;
  std::vector<int64_t> rank(static_cast<size_t>(n));
  std::iota(rank.begin(), rank.end(), int64_t{1});
  common::SplitMix64 rank_rng = MakeRng(o.seed, kRanks);
  Shuffle(rank, rank_rng);
  std::vector<double> weight(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) {
    weight[v] = std::pow(static_cast<double>(rank[v]), -kPopularityExponent);
  }
  std::vector<double> cum_all(static_cast<size_t>(n));
  std::partial_sum(weight.begin(), weight.end(), cum_all.begin());
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(o.num_classes));
  std::vector<std::vector<double>> cum_class(static_cast<size_t>(o.num_classes));
  for (int64_t v = 0; v < n; ++v) {
    const int64_t c = labels[v];
    members[c].push_back(v);
    double prev = cum_class[c].empty() ? 0.0 : cum_class[c].back();
    cum_class[c].push_back(prev + weight[v]);
  }

  const int64_t m =
      o.num_edges > 0
          ? o.num_edges
          : static_cast<int64_t>(std::llround(static_cast<double>(n) * o.avg_degree / 2));
  common::SplitMix64 rng = MakeRng(o.seed, kEdges);
  absl::flat_hash_set<uint64_t> seen;
  seen.reserve(static_cast<size_t>(m));
  g.src.reserve(static_cast<size_t>(m));
  g.dst.reserve(static_cast<size_t>(m));
  const int64_t max_tries = 50 * m + 1000;
  for (int64_t tries = 0; std::ssize(g.src) < m; ++tries) {
    if (tries >= max_tries) {
      return absl::InvalidArgumentError(
          absl::StrCat("generate: placed only ", g.src.size(), " of ", m,
                       " edges without repeats; lower --avg-degree or raise --num-nodes"));
    }
    int64_t a = DrawCumulative(cum_all, rng);
    const int64_t c = labels[a];
    int64_t b = rng.Uniform() < kIntraFraction ? members[c][DrawCumulative(cum_class[c], rng)]
                                               : DrawCumulative(cum_all, rng);
    if (a == b) continue;
    const uint64_t key = static_cast<uint64_t>(std::min(a, b)) * static_cast<uint64_t>(n) +
                         static_cast<uint64_t>(std::max(a, b));
    if (!seen.insert(key).second) continue;
    if (rng() & 1) std::swap(a, b);
    g.src.push_back(a);
    g.dst.push_back(b);
  }
  return absl::OkStatus();
}

}  // namespace

GenerateOptions ProductsFullScale(uint64_t seed) {
  GenerateOptions o;
  o.kind = "products";
  o.seed = seed;
  o.num_nodes = 2'449'029;
  o.num_edges = 61'859'140;
  o.num_features = 100;
  o.num_classes = 47;
  return o;
}

GenerateOptions MagFullScale(uint64_t seed) {
  GenerateOptions o;
  o.kind = "mag";
  o.seed = seed;
  o.num_nodes = 736'389;
  o.num_features = 128;
  o.num_classes = 349;
  return o;
}

absl::StatusOr<Graph> Generate(const GenerateOptions& o) {
  absl::Status s = CheckOptions(o);
  if (!s.ok()) return s;
  common::SplitMix64 class_rng = MakeRng(o.seed, kClasses);
  std::vector<int64_t> labels(static_cast<size_t>(o.num_nodes));
  for (int64_t& label : labels) {
    label = static_cast<int64_t>(class_rng.Below(static_cast<uint64_t>(o.num_classes)));
  }
  Edges edges;
  s = GenerateEdges(o, labels, edges);
  if (!s.ok()) return s;

  common::SplitMix64 feat_rng = MakeRng(o.seed, kFeatures);
  const int64_t f = o.num_features;
  std::vector<double> centroids(static_cast<size_t>(o.num_classes * f));
  for (double& x : centroids) x = Gaussian(feat_rng);
  const double sigma = kNoiseScale * std::sqrt(static_cast<double>(f) / 2);
  std::vector<float> features(static_cast<size_t>(o.num_nodes * f));
  for (int64_t v = 0; v < o.num_nodes; ++v) {
    for (int64_t k = 0; k < f; ++k) {
      features[v * f + k] =
          static_cast<float>(centroids[labels[v] * f + k] + sigma * Gaussian(feat_rng));
    }
  }

  std::vector<int64_t> order(static_cast<size_t>(o.num_nodes));
  std::iota(order.begin(), order.end(), int64_t{0});
  common::SplitMix64 split_rng = MakeRng(o.seed, kSplits);
  Shuffle(order, split_rng);
  const int64_t n_train = o.num_nodes * 6 / 10, n_val = o.num_nodes * 2 / 10;
  auto take = [&](int64_t from, int64_t to) {
    std::vector<int64_t> ids(order.begin() + from, order.begin() + to);
    std::sort(ids.begin(), ids.end());
    return Array<int64_t>::Owned(std::move(ids));
  };
  Graph g = HomogeneousGraph(o.num_nodes, std::move(edges.src), std::move(edges.dst));
  NodeTypeData& t = g.node_types[0];
  t.num_classes = o.num_classes;
  t.feat_dim = f;
  t.features = Array<float>::Owned(std::move(features));
  t.labels = Array<int64_t>::Owned(std::move(labels));
  t.splits["train"] = take(0, n_train);
  t.splits["val"] = take(n_train, n_train + n_val);
  t.splits["test"] = take(n_train + n_val, o.num_nodes);
  return g;
}

}  // namespace graphshard::partitioner
