#include "trainer/feature_store.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

absl::StatusOr<std::unique_ptr<FeatureStore>> FeatureStore::Load(
    const ServerMetadata& metadata,
    const std::function<absl::StatusOr<PartitionClient*>(int part)>& client_of,
    const FeatureStoreOptions& options) {
  auto store = std::unique_ptr<FeatureStore>(new FeatureStore());
  const torch::Dtype dtype = TorchDtype(options.dtype);
  const int64_t elem = FeatureBytes(options.dtype);
  const int64_t per_call = std::max<int64_t>(options.rows_per_call, 1);
  for (const NodeTypeInfo& t : metadata.node_types) {
    if (t.feat_dim == 0) {
      store->tables_.emplace_back();
      continue;
    }
    if (std::ssize(t.part_offsets) != metadata.num_parts + 1) {
      return absl::FailedPreconditionError(
          absl::StrCat("--feature-store device: the servers do not say which '", t.name,
                       "' ids each part owns (Metadata part_offsets); use --feature-store server"));
    }
    const int64_t bytes = t.num_nodes * t.feat_dim * elem;
    torch::Tensor table;
    try {
      table = torch::empty({t.num_nodes, t.feat_dim}, torch::TensorOptions().dtype(dtype).device(
                                                          options.device));
    } catch (const c10::Error& e) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "--feature-store device: ", bytes >> 20, " MiB of '", t.name, "' features do not fit on ",
          options.device.str(), " (", e.what_without_backtrace(),
          "); use --feature-store server or a 16-bit --feature-dtype"));
    }
    for (int p = 0; p < metadata.num_parts; ++p) {
      ASSIGN_OR_RETURN(PartitionClient * client, client_of(p));
      const int64_t end = t.part_offsets[static_cast<size_t>(p) + 1];
      std::vector<int64_t> ids;
      for (int64_t begin = t.part_offsets[static_cast<size_t>(p)]; begin < end; begin += per_call) {
        const int64_t n = std::min(per_call, end - begin);
        ids.resize(static_cast<size_t>(n));
        std::iota(ids.begin(), ids.end(), begin);
        absl::StatusOr<std::string> rows =
            client->GatherRows(t.name, ids, t.feat_dim, options.dtype);
        if (absl::IsUnavailable(rows.status()) || absl::IsDeadlineExceeded(rows.status())) {
          ASSIGN_OR_RETURN(client, client_of(p));  // another replica, or the error again
          rows = client->GatherRows(t.name, ids, t.feat_dim, options.dtype);
        }
        RETURN_IF_ERROR(rows.status());
        torch::Tensor chunk = torch::from_blob(rows->data(), {n, t.feat_dim},
                                               torch::TensorOptions().dtype(dtype));
        table.narrow(0, begin, n).copy_(chunk);  // synchronous: `rows` is freed next
      }
    }
    store->bytes_ += bytes;
    store->tables_.push_back(std::move(table));
  }
  return store;
}

torch::Tensor FeatureStore::Rows(int type, const torch::Tensor& ids) const {
  const torch::Tensor& table = tables_[static_cast<size_t>(type)];
  if (!table.defined()) {
    return torch::empty({ids.size(0), 0}, torch::TensorOptions().device(ids.device()));
  }
  return table.index_select(0, ids);
}

}  // namespace graphshard::trainer
