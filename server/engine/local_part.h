#ifndef GRAPHSHARD_SERVER_ENGINE_LOCAL_PART_H_
#define GRAPHSHARD_SERVER_ENGINE_LOCAL_PART_H_

// What one server answers from its own part, without any network: one-hop sampling over the
// part's in-edges and feature gathers. Validates every request in front (pyg-lib style) and
// computes behind. Thread-safe: all methods are const.

#include <memory>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/partition_part.h"
#include "server/engine/types.h"

namespace graphshard::engine {

class LocalPart {
 public:
  // InvalidArgument if the part is not homogeneous (one node type, one edge type).
  static absl::StatusOr<std::unique_ptr<LocalPart>> Create(
      std::unique_ptr<const common::PartitionPart> part, Limits limits);

  const common::PartitionPart& part() const { return *part_; }
  const common::PartitionBook& book() const { return *book_; }
  const common::NodeShard& nodes() const { return *nodes_; }
  const common::EdgeShard& edges() const { return *edges_; }
  const Limits& limits() const { return limits_; }
  int part_index() const { return part_->part(); }

  // Uniform neighbour sampling, as PyG's NeighborSampler: without replacement at most `fanout`
  // distinct in-edges per seed (all when fanout is -1 or the degree is smaller); with
  // replacement exactly `fanout` draws when the degree is > 0. The draw for a seed depends only
  // on (request.seed, seed id). InvalidArgument for fanout < -1 or above the limit, too many
  // seeds, or a seed this part does not own.
  absl::StatusOr<OneHopResult> SampleOneHop(const OneHopRequest& request) const;

  // Feature rows and labels of `ids` (all owned here), in order. InvalidArgument otherwise.
  absl::StatusOr<FeatureRows> GatherFeatures(absl::Span<const int64_t> ids) const;

  // InvalidArgument naming the first id this part does not own.
  absl::Status CheckOwned(absl::Span<const int64_t> ids, absl::string_view what) const;

 private:
  LocalPart(std::unique_ptr<const common::PartitionPart> part, Limits limits);
  std::unique_ptr<const common::PartitionPart> part_;
  Limits limits_;
  const common::PartitionBook* book_ = nullptr;
  const common::NodeShard* nodes_ = nullptr;
  const common::EdgeShard* edges_ = nullptr;
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_LOCAL_PART_H_
