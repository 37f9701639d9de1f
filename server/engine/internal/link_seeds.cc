#include "server/engine/internal/link_seeds.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/manifest.h"
#include "common/rng.h"

namespace graphshard::engine::internal {
namespace {

constexpr uint64_t kNegativeSalt = 0x6e65676174697665ULL;  // "negative"

std::string SplitNames(const common::EdgeShard& shard) {
  std::vector<std::string> names;
  for (const auto& [name, view] : shard.splits) names.push_back(name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<LinkPlan> ValidateLink(const LocalPart& local, const LinkSampling& link,
                                      const SamplingConfig& sampling,
                                      absl::Span<const int64_t> positions) {
  LinkPlan plan;
  plan.config = link;
  plan.edge_type = local.EdgeTypeIndex(link.edge_type);
  if (plan.edge_type < 0) {
    std::vector<std::string> names;
    for (const EdgeType& e : local.edge_types()) names.push_back(e.name);
    return absl::InvalidArgumentError(absl::StrCat("link prediction: the graph has no edge type '",
                                                   link.edge_type, "' (it has ",
                                                   absl::StrJoin(names, ", "), ")"));
  }
  const EdgeType& et = local.edge_types()[static_cast<size_t>(plan.edge_type)];
  plan.src_type = et.src;
  plan.dst_type = et.dst;
  if (et.shard->splits.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "link prediction: edge type '", et.name,
        "' has no edge splits in this partition (partition it with --edge-split)"));
  }
  auto split = et.shard->splits.find(link.split);
  if (split == et.shard->splits.end()) {
    return absl::InvalidArgumentError(absl::StrCat("link prediction: edge type '", et.name,
                                                   "' has no edge split '", link.split,
                                                   "' (it has ", SplitNames(*et.shard), ")"));
  }
  plan.split = split->second;
  if (link.neg_ratio < 0 || link.neg_ratio > local.limits().max_neg_ratio) {
    return absl::InvalidArgumentError(absl::StrCat("neg_ratio ", link.neg_ratio,
                                                   " is outside 0..",
                                                   local.limits().max_neg_ratio));
  }
  plan.temporal = sampling.temporal != TemporalMode::kOff;
  if (sampling.disjoint && !plan.temporal) {
    return absl::InvalidArgumentError(
        "link prediction streams take disjoint sampling only with temporal sampling");
  }
  if (plan.temporal && !plan.split.has_time) {
    return absl::InvalidArgumentError(absl::StrCat(
        "temporal link prediction: the '", link.split, "' edges of ", et.name,
        " have no times (",
        common::EdgeSplitFilePath(local.part_index(), et.name, absl::StrCat(link.split, "_time")),
        "); partition an input with edge times (edge_time.npy, or edge_time__", et.name,
        ".npy) with --edge-split"));
  }
  // The relation holding the edges reversed, as the partitioner recorded it.
  plan.reverse_edge_type = et.shard->split_reverse.empty()
                               ? -1
                               : local.EdgeTypeIndex(et.shard->split_reverse);
  if (link.neg_sampling == NegativeSampling::kDegree && link.neg_ratio > 0) {
    auto cdf = std::make_shared<std::vector<int64_t>>(1, 0);
    cdf->reserve(et.shard->dst_degree.size() + 1);
    for (int64_t d : et.shard->dst_degree) cdf->push_back(cdf->back() + d);
    if (cdf->back() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "degree-biased negatives: edge type '", et.name, "' has no training edges"));
    }
    plan.degree_cdf = std::move(cdf);
  }
  if (positions.empty()) return absl::InvalidArgumentError("empty seed shard (no edges)");
  if (std::ssize(positions) > local.limits().max_stream_seeds) {
    return absl::InvalidArgumentError(absl::StrCat(positions.size(), " seed edges exceed the limit ",
                                                   local.limits().max_stream_seeds));
  }
  std::vector<bool> seen(static_cast<size_t>(plan.split.size()), false);
  for (int64_t p : positions) {
    if (p < 0 || p >= plan.split.size()) {
      return absl::InvalidArgumentError(absl::StrCat("seed edge ", p, " is outside the ",
                                                     plan.split.size(), " '", link.split,
                                                     "' edges of ", et.name, " in part ",
                                                     local.part_index()));
    }
    if (seen[static_cast<size_t>(p)]) {
      return absl::InvalidArgumentError(absl::StrCat("seed edge ", p, " appears twice"));
    }
    seen[static_cast<size_t>(p)] = true;
  }
  return plan;
}

LinkSeeds MakeLinkSeeds(const LocalPart& local, const LinkPlan& plan,
                        absl::Span<const int64_t> positions, uint64_t seed) {
  LinkSeeds s;
  s.plan = &plan;
  const auto n = std::ssize(positions);
  const int64_t neg = plan.config.neg_ratio;
  s.num_pos = n;
  s.src.reserve(static_cast<size_t>(n * (1 + neg)));
  s.dst.reserve(static_cast<size_t>(n * (1 + neg)));
  for (int64_t p : positions) {
    s.src.push_back(plan.split.src[static_cast<size_t>(p)]);
    s.dst.push_back(plan.split.dst[static_cast<size_t>(p)]);
    if (plan.temporal) s.time.push_back(plan.split.time[static_cast<size_t>(p)]);
  }
  const int64_t num_dst =
      local.node_types()[static_cast<size_t>(plan.dst_type)].book->num_nodes();
  common::SplitMix64 rng(common::MixSeed(seed, kNegativeSalt));
  for (int64_t j = 0; j < neg; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t d;
      if (plan.degree_cdf != nullptr) {
        const std::vector<int64_t>& cdf = *plan.degree_cdf;
        const auto r = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(cdf.back())));
        // The node v with cdf[v] <= r < cdf[v + 1].
        d = std::upper_bound(cdf.begin(), cdf.end(), r) - cdf.begin() - 1;
      } else {
        d = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(num_dst)));
      }
      s.src.push_back(s.src[static_cast<size_t>(i)]);
      s.dst.push_back(d);
      if (plan.temporal) s.time.push_back(s.time[static_cast<size_t>(i)]);
    }
  }
  // The positives leave message passing: the edge itself, its reverse within one node type
  // (an undirected graph stores both), and its reverse in the "rev_" relation.
  s.exclude.resize(local.edge_types().size());
  auto& forward = s.exclude[static_cast<size_t>(plan.edge_type)];
  const bool same_type = plan.src_type == plan.dst_type;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t a = s.src[static_cast<size_t>(i)], b = s.dst[static_cast<size_t>(i)];
    forward.insert({a, b});
    if (same_type) forward.insert({b, a});
    if (plan.reverse_edge_type >= 0) {
      s.exclude[static_cast<size_t>(plan.reverse_edge_type)].insert({b, a});
    }
  }
  return s;
}

}  // namespace graphshard::engine::internal
