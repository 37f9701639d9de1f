#ifndef GRAPHSHARD_SERVER_ENGINE_INTERNAL_LINK_SEEDS_H_
#define GRAPHSHARD_SERVER_ENGINE_INTERNAL_LINK_SEEDS_H_

// The seeds of a link-prediction batch (types.h, LinkSampling): its positive edges, the drawn
// negatives, and the edges left out of message passing. Validated once per stream
// (ValidateLink), made per batch (MakeLinkSeeds). Defined in link_seeds.cc.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/engine/local_part.h"
#include "server/engine/types.h"

namespace graphshard::engine::internal {

// What a link stream checked once: the edge type, its split in the local part, the reverse
// relation (if any), and the degree distribution for degree-biased negatives.
struct LinkPlan {
  LinkSampling config;
  int edge_type = 0;          // index in local.edge_types()
  int reverse_edge_type = -1;  // the edge type holding the edges reversed (manifest), or -1
  int src_type = 0, dst_type = 0;
  common::EdgeSplitView split;
  // Temporal sampling (SamplingConfig.temporal): every supervision edge is seeded at its
  // positive's time (split.time), each endpoint its own tree.
  bool temporal = false;
  // Degree-biased: cumulative training in-degrees of the dst type ([n + 1]); empty otherwise.
  std::shared_ptr<const std::vector<int64_t>> degree_cdf;
};

// InvalidArgument naming what is missing or wrong: an unknown edge type, an edge type without
// edge splits (the partition needs `partition --edge-split`), an unknown split, neg_ratio
// outside 0..limit, degree-biased negatives without training edges, disjoint sampling without
// temporal, temporal sampling of a split without times (naming its <split>_time.npy); and for
// `positions` (the stream's seeds): empty, too many, outside [0, split size), repeated.
absl::StatusOr<LinkPlan> ValidateLink(const LocalPart& local, const LinkSampling& link,
                                      const SamplingConfig& sampling,
                                      absl::Span<const int64_t> positions);

using EdgeKey = std::pair<int64_t, int64_t>;  // (src id, dst id)

struct LinkSeeds {
  const LinkPlan* plan = nullptr;
  // Supervision edges, global ids: positives, then negative j of positive i at num_pos*(1+j)+i.
  std::vector<int64_t> src, dst;
  int64_t num_pos = 0;
  // Temporal only: each supervision edge's seed time (a negative takes its positive's).
  std::vector<int64_t> time;
  // Per edge type (local.edge_types() order): sampled edges (src id, dst id) to leave out.
  std::vector<absl::flat_hash_set<EdgeKey>> exclude;
  bool Excluded(size_t edge_type, int64_t src_id, int64_t dst_id) const {
    const auto& set = exclude[edge_type];
    return !set.empty() && set.contains(EdgeKey{src_id, dst_id});
  }
};

// The batch of split positions `positions`; negatives drawn from `seed` alone (a batch stays a
// function of the stream request, epoch and batch index).
LinkSeeds MakeLinkSeeds(const LocalPart& local, const LinkPlan& plan,
                        absl::Span<const int64_t> positions, uint64_t seed);

}  // namespace graphshard::engine::internal

#endif  // GRAPHSHARD_SERVER_ENGINE_INTERNAL_LINK_SEEDS_H_
