#ifndef GRAPHSHARD_TRAINER_FEATURE_STORE_H_
#define GRAPHSHARD_TRAINER_FEATURE_STORE_H_

// --feature-store device: every node's feature rows, loaded once from the servers onto the
// trainer's device (DGL's GPU feature storage, PyG's features on the GPU), so that batches
// travel as ids and labels only (StreamOptions::without_features) and their rows are gathered
// on the device (one index_select per node type). The servers then sample and copy no rows,
// and no rows cross PCIe per batch; the cost is the whole graph's features on every trainer's
// device, in --feature-dtype (ogbn-products: 2.45 M x 100 float32 = 0.98 GB).
// Includes Torch. Thread-safe once loaded (read-only).

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "client/batch_client.h"
#include "client/feature_rows.h"

namespace graphshard::trainer {

struct FeatureStoreOptions {
  torch::Device device = torch::kCPU;
  client::FeatureDtype dtype =
      client::FeatureDtype::kFloat32;  // rows as the servers would send them
  int64_t rows_per_call = 1 << 16;     // rows asked of a server at once
};

class FeatureStore {
 public:
  // Every row of every node type with features, read with ReadFeatureRows (feature_rows.h:
  // part p's rows from `client_of(p)`, a call whose server is gone asked once more of a fresh
  // `client_of(p)`). Its errors; ResourceExhausted, with the size, when the device cannot hold
  // the rows.
  static absl::StatusOr<std::unique_ptr<FeatureStore>> Load(const client::ServerMetadata& metadata,
                                                            const client::ClientOf& client_of,
                                                            const FeatureStoreOptions& options);

  // The rows of `ids` (int64 [n] of node type `type`, on the store's device, checked in range
  // by the batch decoder): [n, feat_dim] in the store's dtype; [n, 0] for a type without
  // features.
  torch::Tensor Rows(int type, const torch::Tensor& ids) const;
  int64_t bytes() const { return bytes_; }

 private:
  FeatureStore() = default;
  std::vector<torch::Tensor> tables_;  // per node type: [num_nodes, feat_dim]
  int64_t bytes_ = 0;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_FEATURE_STORE_H_
