#ifndef GRAPHSHARD_TRAINER_FEATURE_STORE_H_
#define GRAPHSHARD_TRAINER_FEATURE_STORE_H_

// --feature-store device: the trainer's tiered feature store (docs/DESIGN.md, "The tiered
// feature store"). Batches travel as ids and labels only (StreamOptions::without_features) and
// their rows are assembled on the trainer's device from three tiers:
//  1. device: the rows the trainer's batches visit most (client::VisitCounts over a
//     pre-sampling pass), within a budget (--device-cache-mib); when every row fits, the whole
//     table, gathered with one index_select per node type as before the tiers existed;
//  2. host: the other rows of the parts served on the trainer's own host (--host-tier local),
//     loaded once into the trainer's memory and, on a GPU, registered with CUDA and read by the
//     gather kernel in place over PCIe (zero-copy), with no server copying them into a batch;
//     Beside them, within --host-cache-mib, the hottest rows of the other hosts' parts that
//     the device tier did not take (the host cache), fetched once at load through the remote
//     route and then read like the host tier's own rows;
//  3. remote: the rest (parts on other hosts, or every row outside the cache with --host-tier
//     none), fetched by id per batch (client::GatherRowsById), only the rows that missed the
//     other tiers: asked of the trainer's own host's servers, which read them or fetch them from
//     their owners over the servers' data plane (through their hot-row caches); without a
//     server on the trainer's host, of the owners. On a GPU, a row one of the last batches
//     gathered is copied from that batch instead of fetched again (reuse_batches).
// Or, with --device-tier shared, one tier for the host's GPUs together: the table split by id
// over them (DeviceTierGroup), each reading the others' shares in place over peer access
// (NVLink), through CUDA IPC; for tables over one GPU that fit the host's GPUs.
// The rows are the servers' rows in --feature-dtype whatever their tier, so a run's weights equal
// the server-fed run's bit for bit. On a CPU trainer the same tiers live in CPU memory.
// Includes Torch. Thread-safe once loaded (Rows may run on several threads).

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/batch_client.h"
#include "client/communicator.h"
#include "client/feature_rows.h"
#include "client/feature_tiers.h"
#include "client/visit_counts.h"
#include "trainer/device_tier_group.h"

namespace graphshard::trainer {

struct FeatureStoreOptions {
  torch::Device device = torch::kCPU;
  client::FeatureDtype dtype =
      client::FeatureDtype::kFloat32;  // rows as the servers would send them
  int64_t rows_per_call = 1 << 16;     // rows asked of a server at once
  // Bytes of rows the device tier may hold (client::DeviceCacheBudget); at least the whole
  // table's bytes: every row on the device, no other tier.
  int64_t device_cache_bytes = INT64_MAX;
  // [num_parts]: the parts whose rows the host tier holds (those served on this host with
  // --host-tier local); the other parts' rows are remote. Empty: none.
  std::vector<bool> host_parts;
  // Bytes of other parts' rows (outside `host_parts`) the host tier also holds: the hottest
  // after the device tier's, by `hotness`; 0: none. Ignored when every row is on the device.
  int64_t host_cache_bytes = 0;
  // Ranks the device tier's rows; needed when the budget is below the table's bytes.
  const client::VisitCounts* hotness = nullptr;
  // Where remote rows are asked (client::RowRoute): the servers of the trainer's own host,
  // which fetch other hosts' rows over their data plane, else each owner.
  client::RowRoute remote_route;
  // The shared device tier: when set (group->ok), every node type's rows are split by id over
  // the group's GPUs, share i = rows [i * S, (i + 1) * S) with S = ceil(num_nodes / G), this GPU
  // holding share group->index and reading the others over peer access; no other tier, no
  // budget. `comm` exchanges the shares' handles (one collective per node type with features).
  const DeviceTierGroup* shared = nullptr;
  client::Communicator* comm = nullptr;
  // On a GPU, for a node type with remote rows: a remote row (and a host row) that one of the
  // last `reuse_batches` batches gathered (still on the device: the input pipeline holds that
  // many, --prefetch) is copied from that batch's rows instead of fetched again (or read over
  // PCIe) (tiered_gather.h, ReusedBatches). Types without remote rows keep no ring. 0: off;
  // at most kMaxReusedBatches - 1.
  int reuse_batches = 0;
};

class FeatureStore {
 public:
  // Loads the tiers from the servers (rows read with client::ReadFeatureRows /
  // GatherRowsById: part p's rows from `client_of(p)`, a call whose server is gone asked once
  // more of a fresh one). `client_of` is kept for the remote tier and must outlive the store.
  // Its errors; ResourceExhausted, with the size, when the device cannot hold its tier;
  // InvalidArgument when a budget below the table comes without `hotness`.
  static absl::StatusOr<std::unique_ptr<FeatureStore>> Load(const client::ServerMetadata& metadata,
                                                            client::ClientOf client_of,
                                                            const FeatureStoreOptions& options);
  ~FeatureStore();
  FeatureStore(const FeatureStore&) = delete;
  FeatureStore& operator=(const FeatureStore&) = delete;

  // The rows of `ids` (int64 [n] of node type `type`, on the store's device, checked in range
  // by the batch decoder): [n, feat_dim] in the store's dtype on the device ([n, 0] for a type
  // without features), on the current stream; adds where they came from to `*tiers`. The
  // remote tier's errors (a server gone, naming it). The rows returned must not be written to:
  // with `reuse_batches`, later calls on the same stream may copy rows from them.
  absl::StatusOr<torch::Tensor> Rows(int type, const torch::Tensor& ids,
                                     client::FeatureTierCounts* tiers) const;
  // Bytes of rows held on the device.
  int64_t bytes() const { return layout_.device_bytes; }
  // Of them, those outside LibTorch's caching allocator (the shared device tier's share), which
  // its peak-memory statistics do not count.
  int64_t bytes_outside_allocator() const {
    return layout_.shared_by_gpus > 0 ? layout_.device_bytes : 0;
  }
  const client::FeatureStoreLayout& layout() const { return layout_; }

 private:
  struct Type;
  FeatureStore() = default;
  absl::Status LoadType(int type, const FeatureStoreOptions& options, int64_t budget,
                        int64_t host_cache_budget);
  absl::Status LoadShare(int type, const FeatureStoreOptions& options);

  client::ServerMetadata metadata_;
  client::ClientOf client_of_;
  client::RowRoute remote_route_;
  torch::Device device_ = torch::kCPU;
  client::FeatureDtype dtype_ = client::FeatureDtype::kFloat32;
  std::vector<std::unique_ptr<Type>> types_;  // per node type
  client::FeatureStoreLayout layout_;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_FEATURE_STORE_H_
