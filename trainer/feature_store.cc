#include "trainer/feature_store.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/feature_rows.h"
#include "common/status_macros.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

absl::StatusOr<std::unique_ptr<FeatureStore>> FeatureStore::Load(
    const client::ServerMetadata& metadata, const client::ClientOf& client_of,
    const FeatureStoreOptions& options) {
  auto store = std::unique_ptr<FeatureStore>(new FeatureStore());
  const torch::Dtype dtype = TorchDtype(options.dtype);
  const int64_t elem = client::FeatureBytes(options.dtype);
  for (const client::NodeTypeInfo& t : metadata.node_types) {
    if (t.feat_dim == 0) {
      store->tables_.emplace_back();
      continue;
    }
    const int64_t bytes = t.num_nodes * t.feat_dim * elem;
    torch::Tensor table;
    try {
      table = torch::empty({t.num_nodes, t.feat_dim},
                           torch::TensorOptions().dtype(dtype).device(options.device));
    } catch (const c10::Error& e) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "--feature-store device: ", bytes >> 20, " MiB of '", t.name, "' features do not fit on ",
          options.device.str(), " (", e.what_without_backtrace(),
          "); use --feature-store server or a 16-bit --feature-dtype"));
    }
    const int type = static_cast<int>(store->tables_.size());
    RETURN_IF_ERROR(client::ReadFeatureRows(
        metadata, type, options.dtype, client_of, options.rows_per_call,
        [&](int64_t first_row, int64_t n, std::string rows) -> absl::Status {
          torch::Tensor chunk =
              torch::from_blob(rows.data(), {n, t.feat_dim}, torch::TensorOptions().dtype(dtype));
          table.narrow(0, first_row, n).copy_(chunk);  // synchronous: `rows` is freed next
          return absl::OkStatus();
        }));
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
