#ifndef GRAPHSHARD_CLIENT_VISIT_COUNTS_H_
#define GRAPHSHARD_CLIENT_VISIT_COUNTS_H_

// How often sampled batches visit each node: the hotness the tiered feature store ranks rows by
// (trainer/feature_store.h). Counted over a pre-sampling pass of a trainer's own first-epoch
// training batches, as GNNLab does: the rows its batches will need most, which in-degree only
// approximates (docs/DESIGN.md, "The tiered feature store"). No Torch. Not thread-safe.

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "client/data_types.h"

namespace graphshard::client {

class VisitCounts {
 public:
  // One counter per node of each of `metadata`'s node types.
  explicit VisitCounts(const ServerMetadata& metadata);

  // Counts every node of every block of `batch` once (a node in a batch is one row gathered).
  // The batch must have passed DecodeMinibatch's checks (ids inside their types' ranges).
  void Add(const MinibatchData& batch);

  // The `k` (clamped to [0, num_nodes]) ids of node type `type` visited most, ties broken by the
  // lower id, in ascending id order.
  std::vector<int64_t> Hottest(int type, int64_t k) const;
  // The same among the ids for which `eligible(id)` holds: the hottest rows outside those
  // another tier took (the host tier's cache of other hosts' rows, trainer/feature_store.h).
  std::vector<int64_t> Hottest(int type, int64_t k,
                               absl::FunctionRef<bool(int64_t)> eligible) const;

  // Visits counted for node type `type` (a node of a batch is one visit).
  int64_t visits(int type) const { return visits_[static_cast<size_t>(type)]; }
  // Of those, the visits to the ids in `ids` (ascending, as Hottest returns).
  int64_t VisitsTo(int type, const std::vector<int64_t>& ids) const;

 private:
  std::vector<std::vector<uint32_t>> counts_;  // [type][id], saturating
  std::vector<int64_t> visits_;
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_VISIT_COUNTS_H_
