#include "partitioner/internal/npy_arrays.h"

#include <algorithm>

#include "partitioner/internal/edge_scan.h"

namespace graphshard::partitioner::internal {

absl::Status CheckIdRange(const Array<int64_t>& ids, int64_t n, const std::string& path,
                          absl::string_view what) {
  for (int64_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": index ", i, ": ", what, " ", ids[i], " is outside [0, ", n, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEdgeRange(const EdgeTypeData& e, int64_t num_src, int64_t num_dst,
                            const std::string& path) {
  int64_t bad = -1;
  ScanEdges(e, nullptr, [&](int64_t i) {
    if (bad >= 0) return;
    const int64_t s = e.src_ids[i], d = e.dst_ids[i];
    if (s < 0 || s >= num_src || d < 0 || d >= num_dst) bad = i;
  });
  if (bad < 0) return absl::OkStatus();
  const int64_t s = e.src_ids[bad], d = e.dst_ids[bad];
  const bool src_bad = s < 0 || s >= num_src;
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": column ", bad, ": ", src_bad ? "source " : "target ", src_bad ? s : d,
                   " is outside [0, ", src_bad ? num_src : num_dst, ")"));
}

absl::StatusOr<int64_t> MaxId(const EdgeTypeData& e, const std::string& path) {
  int64_t max_id = -1, neg = -1;
  ScanEdges(e, nullptr, [&](int64_t i) {
    const int64_t s = e.src_ids[i], d = e.dst_ids[i];
    if ((s < 0 || d < 0) && neg < 0) neg = i;
    max_id = std::max({max_id, s, d});
  });
  if (neg >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": column ", neg, ": negative node id"));
  }
  return max_id;
}

}  // namespace graphshard::partitioner::internal
