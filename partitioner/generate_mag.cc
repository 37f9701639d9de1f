// GenerateMag: an ogbn-mag-shaped heterogeneous graph (see generate.h).

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

constexpr double kIntraFraction = 0.8;

// Per node type: a class per node and popularity weights (rank^-0.5 over a random ranking),
// cumulative over all nodes and within each class, to draw endpoints from.
struct TypeModel {
  std::vector<int64_t> cls;
  std::vector<double> cum_all;
  std::vector<std::vector<int64_t>> members;
  std::vector<std::vector<double>> cum_class;
};

TypeModel MakeModel(int64_t n, int64_t num_classes, common::SplitMix64& rng) {
  TypeModel m;
  m.cls.resize(static_cast<size_t>(n));
  for (int64_t& c : m.cls) c = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(num_classes)));
  std::vector<int64_t> rank(static_cast<size_t>(n));
  std::iota(rank.begin(), rank.end(), int64_t{1});
  internal::Shuffle(rank, rng);
  m.members.resize(static_cast<size_t>(num_classes));
  m.cum_class.resize(static_cast<size_t>(num_classes));
  double total = 0;
  for (int64_t v = 0; v < n; ++v) {
    const double w = 1.0 / std::sqrt(static_cast<double>(rank[v]));
    total += w;
    m.cum_all.push_back(total);
    std::vector<double>& cc = m.cum_class[m.cls[v]];
    cc.push_back((cc.empty() ? 0.0 : cc.back()) + w);
    m.members[m.cls[v]].push_back(v);
  }
  return m;
}

// m distinct edges src -> dst: src by popularity; dst of src's class with probability 0.8
// (when that class has members), else by popularity over all of dst's type.
absl::Status SampleRelation(const TypeModel& s, const TypeModel& d, int64_t m, bool same_type,
                            common::SplitMix64& rng, EdgeTypeData& e) {
  std::vector<int64_t> src, dst;
  absl::flat_hash_set<uint64_t> seen;
  const uint64_t nd = d.cls.size();
  for (int64_t tries = 0; std::ssize(src) < m; ++tries) {
    if (tries > 50 * m + 1000) {
      return absl::InvalidArgumentError(absl::StrCat("generate mag: could not place ", m,
                                                     " distinct ", e.Name(),
                                                     " edges; raise --num-nodes"));
    }
    const int64_t a = DrawCumulative(s.cum_all, rng);
    const int64_t c = s.cls[a];
    const bool intra =
        rng.Uniform() < kIntraFraction && c < std::ssize(d.members) && !d.members[c].empty();
    const int64_t b =
        intra ? d.members[c][DrawCumulative(d.cum_class[c], rng)] : DrawCumulative(d.cum_all, rng);
    if (same_type && a == b) continue;
    if (!seen.insert(static_cast<uint64_t>(a) * nd + static_cast<uint64_t>(b)).second) continue;
    src.push_back(a);
    dst.push_back(b);
  }
  e.src_ids = Array<int64_t>::Owned(std::move(src));
  e.dst_ids = Array<int64_t>::Owned(std::move(dst));
  return absl::OkStatus();
}

// Paper features (centroid of the class + N(0, F/2) noise, as for products), labels, splits.
void FillPapers(const GenerateOptions& o, const TypeModel& papers, common::SplitMix64& rng,
                NodeTypeData& t) {
  const int64_t f = o.num_features, n = t.num_nodes;
  std::vector<double> centroids(static_cast<size_t>(o.num_classes * f));
  for (double& x : centroids) x = internal::Gaussian(rng);
  const double sigma = std::sqrt(static_cast<double>(f) / 2);
  std::vector<float> x(static_cast<size_t>(n * f));
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t k = 0; k < f; ++k) {
      x[v * f + k] =
          static_cast<float>(centroids[papers.cls[v] * f + k] + sigma * internal::Gaussian(rng));
    }
  }
  t.feat_dim = f;
  t.features = Array<float>::Owned(std::move(x));
  t.labels = Array<int64_t>::Owned(papers.cls);
  t.num_classes = o.num_classes;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  internal::Shuffle(order, rng);
  const int64_t n_train = n * 6 / 10, n_val = n * 2 / 10;
  auto take = [&](int64_t from, int64_t to) {
    std::vector<int64_t> ids(order.begin() + from, order.begin() + to);
    std::sort(ids.begin(), ids.end());
    return Array<int64_t>::Owned(std::move(ids));
  };
  t.splits["train"] = take(0, n_train);
  t.splits["val"] = take(n_train, n_train + n_val);
  t.splits["test"] = take(n_train + n_val, n);
}

}  // namespace

absl::StatusOr<Graph> GenerateMag(const GenerateOptions& o) {
  if (o.num_nodes < 100 || o.num_nodes > (int64_t{1} << 28)) {
    return absl::InvalidArgumentError("--num-nodes (papers) must be in [100, 2^28] for mag");
  }
  if (o.num_classes < 2 || o.num_classes > o.num_nodes / 10) {
    return absl::InvalidArgumentError("--num-classes must be in [2, papers / 10]");
  }
  if (o.num_features < 1 || o.num_features > 100000) {
    return absl::InvalidArgumentError("--num-features must be in [1, 100000]");
  }
  const double p = static_cast<double>(o.num_nodes);
  const int64_t sizes[] = {o.num_nodes, std::llround(1.5408 * p),
                           std::max<int64_t>(2, std::llround(0.01187 * p)),
                           std::max<int64_t>(2, std::llround(0.08143 * p))};
  const char* names[] = {"paper", "author", "institution", "field_of_study"};
  Graph g;
  std::vector<TypeModel> models;
  for (int t = 0; t < 4; ++t) {
    common::SplitMix64 rng(common::MixSeed(o.seed, 100 + static_cast<uint64_t>(t)));
    NodeTypeData& nt = g.node_types.emplace_back();
    nt.name = names[t];
    nt.num_nodes = sizes[t];
    models.push_back(MakeModel(sizes[t], o.num_classes, rng));
  }
  struct Rel {
    int src, dst;
    const char* rel;
    int64_t count;
  };
  const Rel rels[] = {{1, 2, "affiliated_with", std::llround(0.92 * static_cast<double>(sizes[1]))},
                      {1, 0, "writes", std::llround(9.70 * p)},
                      {0, 0, "cites", std::llround(7.36 * p)},
                      {0, 3, "has_topic", std::llround(10.2 * p)}};
  for (size_t r = 0; r < 4; ++r) {
    // At most half of the possible pairs, so that small graphs stay possible.
    const int64_t count = std::min(rels[r].count, sizes[rels[r].src] * sizes[rels[r].dst] / 2);
    common::SplitMix64 rng(common::MixSeed(o.seed, 200 + r));
    EdgeTypeData& e = g.edge_types.emplace_back();
    e.src = names[rels[r].src];
    e.rel = rels[r].rel;
    e.dst = names[rels[r].dst];
    RETURN_IF_ERROR(SampleRelation(models[rels[r].src], models[rels[r].dst], count,
                                   rels[r].src == rels[r].dst, rng, e));
  }
  common::SplitMix64 rng(common::MixSeed(o.seed, 300));
  FillPapers(o, models[0], rng, g.node_types[0]);
  EdgeTransformOptions undirected;
  undirected.undirected = true;
  RETURN_IF_ERROR(TransformEdges(g, undirected));
  return g;
}

}  // namespace graphshard::partitioner
