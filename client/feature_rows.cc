#include "client/feature_rows.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace graphshard::client {

absl::Status ReadFeatureRows(
    const ServerMetadata& metadata, int type, FeatureDtype dtype, const ClientOf& client_of,
    int64_t rows_per_call,
    const std::function<absl::Status(int64_t first_row, int64_t n, std::string rows)>& sink) {
  if (type < 0 || type >= std::ssize(metadata.node_types)) {
    return absl::InvalidArgumentError(
        absl::StrCat("node type ", type, " of ", metadata.node_types.size()));
  }
  const NodeTypeInfo& t = metadata.node_types[static_cast<size_t>(type)];
  if (t.feat_dim == 0) return absl::OkStatus();
  if (std::ssize(t.part_offsets) != metadata.num_parts + 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the servers do not say which '", t.name, "' ids each part owns (Metadata part_offsets)"));
  }
  const int64_t per_call = std::max<int64_t>(rows_per_call, 1);
  std::vector<int64_t> ids;
  for (int p = 0; p < metadata.num_parts; ++p) {
    ASSIGN_OR_RETURN(PartitionClient * client, client_of(p));
    const int64_t end = t.part_offsets[static_cast<size_t>(p) + 1];
    for (int64_t begin = t.part_offsets[static_cast<size_t>(p)]; begin < end; begin += per_call) {
      const int64_t n = std::min(per_call, end - begin);
      ids.resize(static_cast<size_t>(n));
      std::iota(ids.begin(), ids.end(), begin);
      absl::StatusOr<std::string> rows = client->GatherRows(t.name, ids, t.feat_dim, dtype);
      if (absl::IsUnavailable(rows.status()) || absl::IsDeadlineExceeded(rows.status())) {
        ASSIGN_OR_RETURN(client, client_of(p));  // another replica, or the error again
        rows = client->GatherRows(t.name, ids, t.feat_dim, dtype);
      }
      RETURN_IF_ERROR(rows.status());
      RETURN_IF_ERROR(sink(begin, n, *std::move(rows)));
    }
  }
  return absl::OkStatus();
}

int64_t FeatureTableBytes(const ServerMetadata& metadata, FeatureDtype dtype) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t total = 0;
  for (const NodeTypeInfo& t : metadata.node_types) {
    int64_t rows_bytes = 0;
    if (__builtin_mul_overflow(t.num_nodes, t.feat_dim, &rows_bytes) ||
        __builtin_mul_overflow(rows_bytes, FeatureBytes(dtype), &rows_bytes) ||
        __builtin_add_overflow(total, rows_bytes, &total)) {
      return kMax;
    }
  }
  return total;
}

}  // namespace graphshard::client
