#include "common/csc.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graphshard::common {

absl::StatusOr<CscView> CscView::Create(absl::Span<const int64_t> indptr,
                                        absl::Span<const int64_t> indices, int64_t num_src_nodes,
                                        const std::string& name) {
  if (indptr.empty()) return absl::DataLossError(absl::StrCat(name, ": indptr is empty"));
  if (indptr.front() != 0) {
    return absl::DataLossError(absl::StrCat(name, ": indptr[0] is ", indptr.front(), ", not 0"));
  }
  for (size_t i = 1; i < indptr.size(); ++i) {
    if (indptr[i] < indptr[i - 1]) {
      return absl::DataLossError(absl::StrCat(name, ": indptr decreases at ", i));
    }
  }
  if (indptr.back() != static_cast<int64_t>(indices.size())) {
    return absl::DataLossError(absl::StrCat(name, ": indptr last value ", indptr.back(),
                                            " != indices length ", indices.size()));
  }
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= num_src_nodes) {
      return absl::DataLossError(absl::StrCat(name, ": indices[", i, "] = ", indices[i],
                                              " is outside [0, ", num_src_nodes, ")"));
    }
  }
  return CscView(indptr, indices);
}

int PartitionBook::Owner(int64_t id) const {
  if (offsets_.empty() || id < 0 || id >= offsets_.back()) return -1;
  // First offset strictly greater than id, minus one; empty parts are skipped naturally.
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), id);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

}  // namespace graphshard::common
