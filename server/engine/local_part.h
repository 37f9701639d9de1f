#ifndef GRAPHSHARD_SERVER_ENGINE_LOCAL_PART_H_
#define GRAPHSHARD_SERVER_ENGINE_LOCAL_PART_H_

// What one server answers from its own part, without any network: one-hop sampling over the
// part's in-edges (every edge type in one call) and feature gathers (every node type in one
// call). Validates every request in front (pyg-lib style) and computes behind. Thread-safe: all
// methods are const.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/partition_part.h"
#include "server/engine/internal/node_index.h"
#include "server/engine/types.h"

namespace graphshard::engine {

struct NodeType {
  std::string name;
  const common::PartitionBook* book = nullptr;
  const common::NodeShard* shard = nullptr;
};

struct EdgeType {
  std::string name;
  int src = 0;  // index into LocalPart::node_types()
  int dst = 0;
  const common::EdgeShard* shard = nullptr;
};

class LocalPart {
 public:
  // Never fails for a loaded part; StatusOr keeps the Create contract.
  static absl::StatusOr<std::unique_ptr<LocalPart>> Create(
      std::unique_ptr<const common::PartitionPart> part, Limits limits);
  // The same part with other node rows (full-graph inference's layer tables, layer_tables.h):
  // `shards[t]` replaces node type t's feat_dim and features (ids, labels, orig ids and splits
  // stay `base`'s); edges, books and limits are `base`'s, which must outlive the result.
  // InvalidArgument unless there is one shard per node type, with base's id range and
  // features of [rows, feat_dim].
  static absl::StatusOr<std::unique_ptr<LocalPart>> WithNodeRows(
      const LocalPart& base, std::vector<common::NodeShard> shards);

  const common::PartitionPart& part() const { return *part_; }
  const Limits& limits() const { return limits_; }
  int part_index() const { return part_->part(); }
  int num_parts() const { return part_->manifest().num_parts; }
  const std::vector<NodeType>& node_types() const { return node_types_; }
  const std::vector<EdgeType>& edge_types() const { return edge_types_; }
  // The labelled node type (the first with classes), else the first type.
  int target_type() const { return target_type_; }
  // -1 if unknown.
  int NodeTypeIndex(absl::string_view name) const;
  int EdgeTypeIndex(absl::string_view name) const;

  // Uniform neighbour sampling per item, as PyG's NeighborSampler: without replacement at most
  // `fanout` distinct in-edges per seed (all when fanout is -1 or the degree is smaller); with
  // replacement exactly `fanout` draws when the degree is > 0. The draw for a seed depends only
  // on (item.seed, seed id). Temporal (request.temporal): only the in-edges at or before
  // (strictly before) the seed's time in item.times are candidates, drawn uniformly or the most
  // recent `fanout` (request.temporal_strategy); edge types without times are not constrained.
  // InvalidArgument for an unknown edge type, fanout < -1 or above the limit, too many seeds,
  // a seed this part does not own, or item.times not one per seed in temporal mode (or given
  // outside it); Cancelled when `cancelled` says so (asked every few thousand seeds).
  absl::StatusOr<std::vector<HopResult>> SampleOneHop(const OneHopRequest& request,
                                                      const CancelFn& cancelled = {}) const;
  // For a hop asked from outside (a peer): validates it as SampleOneHop does and counts the
  // edges it would sample exactly from the seeds' degrees; ResourceExhausted above the budget
  // (Limits::max_request_*). The minibatch builder's own hops need not: the batch's bound
  // covers them.
  absl::Status CheckHopCost(const OneHopRequest& request) const;

  // Feature rows (converted to `dtype`) and labels, per item in order. InvalidArgument for an
  // unknown type or an id this part does not own; ResourceExhausted when the answer would be
  // above Limits::max_request_bytes (checked before any row is copied).
  absl::StatusOr<std::vector<FeatureBlock>> GatherFeatures(absl::Span<const TypedIds> items,
                                                           FeatureDtype dtype) const;

  // InvalidArgument naming the first id of `node_type` this part does not own.
  absl::Status CheckOwned(int node_type, absl::Span<const int64_t> ids,
                          absl::string_view what) const;

  // Relabelling tables reused by the minibatches built on this part (minibatch_builder.cc).
  internal::RelabelTablePool& relabel_tables() const { return relabel_tables_; }

 private:
  LocalPart(std::unique_ptr<const common::PartitionPart> part, Limits limits);
  absl::Status SampleItem(const HopItem& item, const OneHopRequest& request,
                          const CancelFn& cancelled, HopResult& out) const;
  // Validates the item (edge type, fanout, seeds owned) and returns how many edges it samples.
  absl::StatusOr<int64_t> ItemEdges(const HopItem& item, bool replace) const;

  std::unique_ptr<const common::PartitionPart> owned_part_;  // null for WithNodeRows views
  const common::PartitionPart* part_ = nullptr;
  std::vector<common::NodeShard> own_shards_;  // WithNodeRows: node_types_[t].shard points here
  Limits limits_;
  std::vector<NodeType> node_types_;
  std::vector<EdgeType> edge_types_;
  int target_type_ = 0;
  mutable internal::RelabelTablePool relabel_tables_;
};

// Writes the n floats at `src` converted to `dtype` at `dst` (n * dtype size bytes): the one
// conversion of every feature row a server sends (round to nearest even, as torch's .half() and
// .bfloat16()), so rows converted elsewhere (engine::CachedPeers) are byte-identical.
void ConvertFloatRow(const float* src, int64_t n, FeatureDtype dtype, char* dst);

// Writes local row `row` of `shard` converted to `dtype` at `dst` (feat_dim * dtype size bytes).
// Plain stores: non-temporal ones were measured no faster on the GPU machine (tests/bench/
// RESULTS.md, "Queued all-reduce, streams over epochs, two-pass sampling").
void WriteFeatureRow(const common::NodeShard& shard, int64_t row, FeatureDtype dtype, char* dst);

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_LOCAL_PART_H_
