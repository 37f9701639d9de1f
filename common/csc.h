#ifndef GRAPHSHARD_COMMON_CSC_H_
#define GRAPHSHARD_COMMON_CSC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace graphshard::common {

// In-edge adjacency (CSC) of the nodes one partition owns, for one edge type: the in-neighbors
// (global source ids) of local node v are indices()[indptr()[v], indptr()[v + 1]). A view: the
// arrays stay owned by whoever made it (the mmap of the partition's .npy files), which must
// outlive it. Thread-safe: all methods are const.
class CscView {
 public:
  CscView() = default;
  // DataLoss naming `name` unless indptr is non-empty, starts at 0, never decreases, ends at
  // indices.size(), and every index is in [0, num_src_nodes).
  static absl::StatusOr<CscView> Create(absl::Span<const int64_t> indptr,
                                        absl::Span<const int64_t> indices, int64_t num_src_nodes,
                                        const std::string& name);
  int64_t num_dst_nodes() const { return static_cast<int64_t>(indptr_.size()) - 1; }
  int64_t num_edges() const { return static_cast<int64_t>(indices_.size()); }
  // Edge positions [EdgeBegin, EdgeEnd) of local_dst's in-edges (edge ids start here too).
  int64_t EdgeBegin(int64_t local_dst) const { return indptr_[local_dst]; }
  int64_t EdgeEnd(int64_t local_dst) const { return indptr_[local_dst + 1]; }
  // The source node of the edge at `position`.
  int64_t Source(int64_t position) const { return indices_[position]; }
  absl::Span<const int64_t> InNeighbors(int64_t local_dst) const {
    return indices_.subspan(indptr_[local_dst], indptr_[local_dst + 1] - indptr_[local_dst]);
  }
  // Hints for a loop over many nodes (sampling is bound by memory latency): the offsets of
  // local_dst, read by EdgeBegin/EdgeEnd and InNeighbors; the source at an edge position.
  void PrefetchOffsets(int64_t local_dst) const { __builtin_prefetch(indptr_.data() + local_dst); }
  void PrefetchSource(int64_t position) const { __builtin_prefetch(indices_.data() + position); }

 private:
  CscView(absl::Span<const int64_t> indptr, absl::Span<const int64_t> indices)
      : indptr_(indptr), indices_(indices) {}
  absl::Span<const int64_t> indptr_;
  absl::Span<const int64_t> indices_;
};

// Which part owns a global id of one node type: a binary search over the parts' contiguous
// ranges. Thread-safe (immutable).
class PartitionBook {
 public:
  PartitionBook() = default;
  explicit PartitionBook(std::vector<int64_t> part_offsets) : offsets_(std::move(part_offsets)) {}
  int num_parts() const { return static_cast<int>(offsets_.size()) - 1; }
  int64_t num_nodes() const { return offsets_.empty() ? 0 : offsets_.back(); }
  int64_t begin(int part) const { return offsets_[part]; }
  int64_t end(int part) const { return offsets_[part + 1]; }
  // -1 if id is outside [0, num_nodes).
  int Owner(int64_t id) const;
  const std::vector<int64_t>& offsets() const { return offsets_; }

 private:
  std::vector<int64_t> offsets_;
};

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_CSC_H_
