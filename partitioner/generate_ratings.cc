// GenerateRatings: a heterogeneous temporal bipartite graph of users rating items (see
// generate.h).

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "partitioner/generate.h"
#include "partitioner/internal/gen_util.h"

namespace graphshard::partitioner {
namespace {

using internal::DrawCumulative;
using internal::Gaussian;

// Share of ratings that follow the user's taste (the rest explore a uniform category).
constexpr double kTasteFraction = 0.85;
// Tries to find an item the user has not rated yet, released by the rating's time.
constexpr int kItemTries = 40;

struct Items {
  std::vector<int64_t> category;
  std::vector<int64_t> release;
  std::vector<double> log_popularity;
  std::vector<std::vector<int64_t>> members;    // per category
  std::vector<std::vector<double>> cum_weight;  // per category, cumulative popularity
};

Items MakeItems(int64_t n, int64_t k, int64_t horizon, common::SplitMix64& rng) {
  Items it;
  it.members.resize(static_cast<size_t>(k));
  it.cum_weight.resize(static_cast<size_t>(k));
  std::vector<int64_t> rank(static_cast<size_t>(n));
  std::iota(rank.begin(), rank.end(), int64_t{1});
  internal::Shuffle(rank, rng);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(k)));
    // Zipf popularity (exponent 1): a few blockbusters, a long tail.
    const double w = 1.0 / static_cast<double>(rank[i]);
    it.category.push_back(c);
    it.release.push_back(static_cast<int64_t>(rng.Below(static_cast<uint64_t>(horizon / 2))));
    it.log_popularity.push_back(std::log(w * static_cast<double>(n)));
    std::vector<double>& cum = it.cum_weight[c];
    cum.push_back((cum.empty() ? 0.0 : cum.back()) + w);
    it.members[c].push_back(i);
  }
  return it;
}

// Row-major [n, f]: centroid of `cls[v]` (N(0, 1) per dimension, shared by users and items)
// scaled by `signal`, plus N(0, 1) noise; with `extra`, one more column holding extra[v].
std::vector<float> Features(const std::vector<int64_t>& cls, const std::vector<double>& centroids,
                            int64_t f, double signal, const std::vector<double>* extra,
                            common::SplitMix64& rng) {
  const int64_t cols = f + (extra != nullptr ? 1 : 0);
  std::vector<float> x;
  x.reserve(cls.size() * static_cast<size_t>(cols));
  for (size_t v = 0; v < cls.size(); ++v) {
    for (int64_t j = 0; j < f; ++j) {
      x.push_back(static_cast<float>(signal * centroids[cls[v] * f + j] + Gaussian(rng)));
    }
    if (extra != nullptr) x.push_back(static_cast<float>((*extra)[v] + 0.5 * Gaussian(rng)));
  }
  return x;
}

}  // namespace

absl::StatusOr<Graph> GenerateRatings(const GenerateOptions& o) {
  const int64_t users = o.num_nodes;
  const int64_t items = o.num_items > 0 ? o.num_items : std::max<int64_t>(20, users / 2);
  const int64_t k = o.num_classes;
  const int64_t horizon = o.time_horizon;
  if (users < 10 || users > (int64_t{1} << 26) || items < 10 || items > (int64_t{1} << 26)) {
    return absl::InvalidArgumentError("--num-nodes (users) and --num-items must be in [10, 2^26]");
  }
  if (k < 2 || k > items / 5) {
    return absl::InvalidArgumentError("--num-classes (item categories) must be in [2, items / 5]");
  }
  if (o.num_features < 1 || o.num_features > 100000) {
    return absl::InvalidArgumentError("--num-features must be in [1, 100000]");
  }
  if (!(o.avg_degree >= 2) || o.avg_degree > static_cast<double>(items) / 4) {
    return absl::InvalidArgumentError("--avg-degree (ratings per user) must be in [2, items / 4]");
  }
  if (horizon < 10) return absl::InvalidArgumentError("the time horizon must be >= 10");

  common::SplitMix64 item_rng(common::MixSeed(o.seed, 400));
  const Items it = MakeItems(items, k, horizon, item_rng);
  common::SplitMix64 user_rng(common::MixSeed(o.seed, 401));
  std::vector<int64_t> early(static_cast<size_t>(users)), late(static_cast<size_t>(users)),
      signup(static_cast<size_t>(users));
  std::vector<int64_t> src, dst, time;
  absl::flat_hash_set<uint64_t> rated;
  for (int64_t u = 0; u < users; ++u) {
    // Tastes drift: from `early` towards `late` over the user's active period.
    early[u] = static_cast<int64_t>(user_rng.Below(static_cast<uint64_t>(k)));
    late[u] = static_cast<int64_t>(user_rng.Below(static_cast<uint64_t>(k)));
    signup[u] = static_cast<int64_t>(user_rng.Below(static_cast<uint64_t>(horizon / 2)));
    // Activity is skewed too (log-normal around avg_degree), at least 2 ratings.
    const int64_t n = std::clamp<int64_t>(
        std::llround(o.avg_degree * std::exp(0.6 * Gaussian(user_rng) - 0.18)), 2, items / 4);
    std::vector<int64_t> when;
    for (int64_t r = 0; r < n; ++r) {
      when.push_back(signup[u] +
                     static_cast<int64_t>(user_rng.Below(static_cast<uint64_t>(horizon - signup[u]))));
    }
    std::sort(when.begin(), when.end());
    for (int64_t t : when) {
      const double drift =
          static_cast<double>(t - signup[u]) / static_cast<double>(horizon - signup[u]);
      const double x = user_rng.Uniform();
      const int64_t c = x < kTasteFraction * (1 - drift) ? early[u]
                        : x < kTasteFraction           ? late[u]
                                  : static_cast<int64_t>(user_rng.Below(static_cast<uint64_t>(k)));
      if (it.members[c].empty()) continue;
      for (int tries = 0; tries < kItemTries; ++tries) {
        const int64_t i = it.members[c][DrawCumulative(it.cum_weight[c], user_rng)];
        if (it.release[i] > t) continue;
        if (!rated.insert(static_cast<uint64_t>(u) * static_cast<uint64_t>(items) +
                          static_cast<uint64_t>(i))
                 .second) {
          continue;
        }
        src.push_back(u);
        dst.push_back(i);
        time.push_back(t);
        break;
      }
    }
  }

  Graph g;
  common::SplitMix64 feat_rng(common::MixSeed(o.seed, 402));
  std::vector<double> centroids(static_cast<size_t>(k * o.num_features));
  for (double& c : centroids) c = Gaussian(feat_rng);
  {
    NodeTypeData& t = g.node_types.emplace_back();
    t.name = "item";
    t.num_nodes = items;
    t.feat_dim = o.num_features + 1;
    t.features = Array<float>::Owned(
        Features(it.category, centroids, o.num_features, 0.7, &it.log_popularity, feat_rng));
    t.labels = Array<int64_t>::Owned(it.category);
    t.num_classes = k;
    t.time = Array<int64_t>::Owned(it.release);
    std::vector<int64_t> order(static_cast<size_t>(items));
    std::iota(order.begin(), order.end(), int64_t{0});
    internal::Shuffle(order, feat_rng);
    const int64_t n_train = items * 6 / 10, n_val = items * 2 / 10;
    auto take = [&](int64_t from, int64_t to) {
      std::vector<int64_t> ids(order.begin() + from, order.begin() + to);
      std::sort(ids.begin(), ids.end());
      return Array<int64_t>::Owned(std::move(ids));
    };
    t.splits["train"] = take(0, n_train);
    t.splits["val"] = take(n_train, n_train + n_val);
    t.splits["test"] = take(n_train + n_val, items);
  }
  {
    NodeTypeData& t = g.node_types.emplace_back();
    t.name = "user";
    t.num_nodes = users;
    t.feat_dim = o.num_features;
    // A weak hint of the early taste (what a sign-up form would tell).
    t.features = Array<float>::Owned(
        Features(early, centroids, o.num_features, 0.3, nullptr, feat_rng));
    t.labels = Array<int64_t>::Owned(late);
    t.num_classes = k;
    t.time = Array<int64_t>::Owned(signup);
  }
  EdgeTypeData& e = g.edge_types.emplace_back();
  e.src = "user";
  e.rel = "rates";
  e.dst = "item";
  e.src_ids = Array<int64_t>::Owned(std::move(src));
  e.dst_ids = Array<int64_t>::Owned(std::move(dst));
  e.time = Array<int64_t>::Owned(std::move(time));
  EdgeTransformOptions undirected;
  undirected.undirected = true;  // item__rev_rates__user, each edge with its time
  RETURN_IF_ERROR(TransformEdges(g, undirected));
  return g;
}

}  // namespace graphshard::partitioner
