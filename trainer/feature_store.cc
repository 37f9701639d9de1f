#include "trainer/feature_store.h"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "client/device_share.h"
#include "client/feature_rows.h"
#include "common/status_macros.h"
#include "trainer/gpu_memory.h"
#include "trainer/host_register.h"
#include "trainer/shared_tier_probe.h"
#include "trainer/tensors.h"
#include "trainer/tiered_gather.h"

namespace graphshard::trainer {

// Codes of a node type's map (int32 [num_nodes], on the device): >= 0, the row's slot in the
// device tier; kRemote, fetched from its server; <= kHostBase, host tier row kHostBase - code.
constexpr int32_t kRemote = -1;
constexpr int32_t kHostBase = -2;
// A batch's remote rows are asked in calls of this many, several in flight (GatherRowsById).
constexpr int64_t kRemoteRowsPerCall = 8192;

struct FeatureStore::Type {
  int64_t dim = 0;
  int64_t row_bytes = 0;
  bool whole = false;          // every row in `device_table`, by id: no map, no other tier
  torch::Tensor device_table;  // whole: [num_nodes, dim]; else the device tier [k, dim]
  torch::Tensor code;          // int32 [num_nodes] on the device (not when whole)
  torch::Tensor host_table;    // CPU [host rows, dim]
  torch::Tensor host_view;     // host_table as the device reads it (undefined: copy instead)
  void* registered = nullptr;  // host_table's memory, registered with CUDA
  bool has_remote = false;     // some rows are in no tier here: fetched by id
  // The shared device tier: this GPU holds rows [share_lo, share_hi) in `device_table` (memory
  // of its own, `own_share`); `shares` (uint64 [G], on the device) where the GPU reads each
  // share, the others mapped from their processes (`peer_shares`).
  bool shared = false;
  int64_t share_rows = 0, share_lo = 0, share_hi = 0;
  void* own_share = nullptr;
  std::vector<void*> peer_shares;
  torch::Tensor shares;
  SharedTierProbe probe;  // its diagnostic, when probe.dir is set (shared_tier_probe.h)
  mutable std::atomic<int64_t> gathers{0};
  // Remote and host rows copied from the batches gathered before, where the type has remote
  // rows (FeatureStoreOptions::reuse_batches).
  struct Reuse {
    int slots = 0;  // reuse_batches + 1: the batch being gathered takes a slot of its own
    std::mutex mu;
    torch::Tensor last;      // int32 [num_nodes] on the device (ReusedBatches::last)
    torch::Tensor reused;    // int64 [1] on the device: rows copied so far
    int64_t counted = 0;     // of them, added to the tiers' counts
    void* stream = nullptr;  // the stream the slots' batches were gathered on
    int64_t next = 0;        // the next batch's number; its slot is next % slots
    torch::Tensor ids[kMaxReusedBatches], rows[kMaxReusedBatches];

    // The ring's batches for the next gather on stream `on` (a stream other than the ring's
    // starts it anew: only the same stream orders a gather after the ones whose rows it
    // copies), with this batch's slot emptied for it.
    ReusedBatches Next(void* on) {
      if (stream != on) {
        for (int s = 0; s < slots; ++s) ids[s] = rows[s] = torch::Tensor();
        stream = on;
      }
      ReusedBatches out;
      out.slot = static_cast<int>(next++ % slots);
      ids[out.slot] = rows[out.slot] = torch::Tensor();
      for (int s = 0; s < slots; ++s) {
        if (!ids[s].defined()) continue;
        out.ids[s] = ids[s].data_ptr<int64_t>();
        out.rows[s] = rows[s].data_ptr();
        out.n[s] = ids[s].size(0);
      }
      out.last = last.data_ptr<int32_t>();
      out.reused = reinterpret_cast<unsigned long long*>(reused.data_ptr<int64_t>());
      return out;
    }
  };
  std::unique_ptr<Reuse> reuse;
};

namespace {

torch::Tensor Empty(int64_t rows, int64_t dim, client::FeatureDtype dtype, torch::Device device) {
  return torch::empty({rows, dim}, torch::TensorOptions().dtype(TorchDtype(dtype)).device(device));
}

absl::Status NoRoom(absl::string_view what, int64_t bytes, const std::string& type,
                    const std::string& where, const c10::Error& e) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "--feature-store device: the ", what, " tier's ", bytes >> 20, " MiB of '", type,
      "' rows do not fit in ", where, " (", e.what_without_backtrace(),
      "); use a smaller --device-cache-mib, --host-tier none, a 16-bit --feature-dtype or "
      "--feature-store server"));
}

}  // namespace

FeatureStore::~FeatureStore() {
  for (const std::unique_ptr<Type>& t : types_) {
    if (t->registered != nullptr) UnregisterHost(t->registered);
    for (void* peer : t->peer_shares) ClosePeer(peer);
    t->device_table = torch::Tensor();  // a view of own_share
    FreeShareable(t->own_share);
  }
}

absl::StatusOr<std::unique_ptr<FeatureStore>> FeatureStore::Load(
    const client::ServerMetadata& metadata, client::ClientOf client_of,
    const FeatureStoreOptions& options) {
  auto store = std::unique_ptr<FeatureStore>(new FeatureStore());
  store->metadata_ = metadata;
  store->client_of_ = std::move(client_of);
  store->remote_route_ = options.remote_route;
  store->device_ = options.device;
  store->dtype_ = options.dtype;
  // The budget is shared in proportion to each type's table (every type's hottest rows alike).
  const int64_t table_bytes = client::FeatureTableBytes(metadata, options.dtype);
  for (size_t i = 0; i < metadata.node_types.size(); ++i) {
    const client::NodeTypeInfo& t = metadata.node_types[i];
    const int64_t bytes = t.num_nodes * t.feat_dim * client::FeatureBytes(options.dtype);
    const auto share = [&](int64_t total) {
      return static_cast<int64_t>(
          static_cast<double>(total) *
          (static_cast<double>(bytes) / static_cast<double>(std::max<int64_t>(table_bytes, 1))));
    };
    const int64_t budget =
        options.device_cache_bytes >= table_bytes ? bytes : share(options.device_cache_bytes);
    const int64_t host_cache =
        options.host_cache_bytes >= table_bytes ? bytes : share(options.host_cache_bytes);
    if (options.shared != nullptr) {
      RETURN_IF_ERROR(store->LoadShare(static_cast<int>(i), options));
    } else {
      RETURN_IF_ERROR(store->LoadType(static_cast<int>(i), options, budget, host_cache));
    }
  }
  if (options.shared != nullptr) store->layout_.shared_by_gpus = std::ssize(options.shared->ranks);
  client::FeatureStoreLayout& l = store->layout_;
  l.expected_device_hit_rate =
      l.presampled_visits > 0 ? l.presampled_hits / l.presampled_visits : 1;
  return store;
}

absl::Status FeatureStore::LoadType(int type, const FeatureStoreOptions& options, int64_t budget,
                                    int64_t host_cache_budget) {
  const client::NodeTypeInfo& t = metadata_.node_types[static_cast<size_t>(type)];
  types_.push_back(std::make_unique<Type>());
  Type& ty = *types_.back();
  if (t.feat_dim == 0) return absl::OkStatus();
  ty.dim = t.feat_dim;
  ty.row_bytes = t.feat_dim * client::FeatureBytes(options.dtype);
  const int64_t table_bytes = t.num_nodes * ty.row_bytes;
  const torch::Dtype dtype = TorchDtype(options.dtype);
  const auto copy_into = [&](torch::Tensor& table) {
    return [&table, &t, dtype](int64_t first_row, int64_t n, std::string rows) -> absl::Status {
      torch::Tensor chunk =
          torch::from_blob(rows.data(), {n, t.feat_dim}, torch::TensorOptions().dtype(dtype));
      table.narrow(0, first_row, n).copy_(chunk);  // synchronous: `rows` is freed next
      return absl::OkStatus();
    };
  };

  if (budget >= table_bytes) {  // every row on the device, gathered by id
    try {
      ty.device_table = Empty(t.num_nodes, t.feat_dim, options.dtype, device_);
    } catch (const c10::Error& e) {
      return NoRoom("device", table_bytes, t.name, device_.str(), e);
    }
    RETURN_IF_ERROR(client::ReadFeatureRows(metadata_, type, options.dtype, client_of_,
                                            options.rows_per_call, copy_into(ty.device_table)));
    ty.whole = true;
    if (options.hotness != nullptr) {
      layout_.presampled_visits += static_cast<double>(options.hotness->visits(type));
      layout_.presampled_hits += static_cast<double>(options.hotness->visits(type));
    }
    layout_.device_bytes += table_bytes;
    layout_.device_rows += t.num_nodes;
    return absl::OkStatus();
  }
  if (options.hotness == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("the device tier holds only part of '", t.name,
                                                   "' rows: it needs their visit counts"));
  }
  if (t.num_nodes > std::numeric_limits<int32_t>::max() + int64_t{kHostBase}) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", t.name, "' has ", t.num_nodes,
                     " nodes: the tiered store's map holds at most 2^31 - 3"));
  }
  const int64_t map_bytes = t.num_nodes * static_cast<int64_t>(sizeof(int32_t));
  const int64_t k = std::clamp<int64_t>((budget - map_bytes) / ty.row_bytes, 0, t.num_nodes);

  // The host tier: every row of the host's parts, in part order, then the host cache; the map
  // says where each is.
  torch::Tensor code = torch::full({t.num_nodes}, kRemote, torch::kInt32);
  int32_t* codes = code.data_ptr<int32_t>();
  int64_t host_rows = 0;
  const std::vector<bool>& host_parts = options.host_parts;
  for (int p = 0; p < metadata_.num_parts && p < std::ssize(host_parts); ++p) {
    if (!host_parts[static_cast<size_t>(p)]) continue;
    for (int64_t id = t.part_offsets[static_cast<size_t>(p)];
         id < t.part_offsets[static_cast<size_t>(p) + 1]; ++id) {
      codes[id] = static_cast<int32_t>(kHostBase - host_rows++);
    }
  }
  const int64_t part_rows = host_rows;
  const std::vector<int64_t> hot = options.hotness->Hottest(type, k);  // the device tier's
  // The host cache: the hottest other parts' rows outside the device tier (none to rank when
  // the host's parts hold every row).
  std::vector<int64_t> host_cached;
  if (host_cache_budget >= ty.row_bytes && part_rows < t.num_nodes) {
    host_cached = options.hotness->Hottest(type, host_cache_budget / ty.row_bytes, [&](int64_t id) {
      return codes[id] == kRemote && !std::binary_search(hot.begin(), hot.end(), id);
    });
    for (const int64_t id : host_cached) codes[id] = static_cast<int32_t>(kHostBase - host_rows++);
  }
  if (host_rows > 0) {
    try {
      ty.host_table = Empty(host_rows, t.feat_dim, options.dtype, torch::kCPU);
    } catch (const c10::Error& e) {
      return NoRoom("host", host_rows * ty.row_bytes, t.name, "host memory", e);
    }
    if (part_rows > 0) {
      RETURN_IF_ERROR(client::ReadFeatureRows(metadata_, type, options.dtype, client_of_,
                                              options.rows_per_call, copy_into(ty.host_table),
                                              host_parts));
    }
    if (!host_cached.empty()) {
      RETURN_IF_ERROR(client::GatherRowsByIdInto(
          metadata_, type, options.dtype, client_of_, host_cached, options.rows_per_call,
          remote_route_,
          absl::MakeSpan(static_cast<char*>(ty.host_table.data_ptr()) + part_rows * ty.row_bytes,
                         static_cast<size_t>(std::ssize(host_cached) * ty.row_bytes))));
    }
    if (!device_.is_cuda()) {
      ty.host_view = ty.host_table;
    } else {
      std::string why;
      void* on_device = RegisterHostForDevice(ty.host_table.data_ptr(),
                                              static_cast<size_t>(host_rows * ty.row_bytes), &why);
      if (on_device != nullptr) {
        ty.registered = ty.host_table.data_ptr();
        ty.host_view = torch::from_blob(on_device, {host_rows, t.feat_dim},
                                        torch::TensorOptions().dtype(dtype).device(device_));
        layout_.host_zero_copy = true;
      } else {
        layout_.host_note = why;  // gathered on the CPU and copied instead
      }
    }
  }

  // The device tier: the k hottest rows, from the host tier or their servers.
  layout_.presampled_visits += static_cast<double>(options.hotness->visits(type));
  layout_.presampled_hits += static_cast<double>(options.hotness->VisitsTo(type, hot));
  torch::Tensor cache = Empty(k, t.feat_dim, options.dtype, torch::kCPU);
  std::vector<int64_t> remote_ids, remote_slots, host_slots, host_index;
  for (int64_t slot = 0; slot < k; ++slot) {
    const int64_t id = hot[static_cast<size_t>(slot)];
    if (codes[id] == kRemote) {
      remote_ids.push_back(id);
      remote_slots.push_back(slot);
    } else {
      host_slots.push_back(slot);
      host_index.push_back(kHostBase - codes[id]);
    }
    codes[id] = static_cast<int32_t>(slot);
  }
  const auto index = [](std::vector<int64_t>& v) {
    return torch::from_blob(v.data(), {std::ssize(v)}, torch::kInt64);
  };
  if (!host_slots.empty()) {
    cache.index_copy_(0, index(host_slots), ty.host_table.index_select(0, index(host_index)));
  }
  if (!remote_ids.empty()) {
    ASSIGN_OR_RETURN(std::string rows,
                     client::GatherRowsById(metadata_, type, options.dtype, client_of_, remote_ids,
                                            options.rows_per_call, remote_route_));
    cache.index_copy_(0, index(remote_slots),
                      torch::from_blob(rows.data(), {std::ssize(remote_ids), t.feat_dim},
                                       torch::TensorOptions().dtype(dtype)));
  }
  try {
    ty.device_table = cache.to(device_);
    ty.code = code.to(device_);
  } catch (const c10::Error& e) {
    return NoRoom("device", k * ty.row_bytes + map_bytes, t.name, device_.str(), e);
  }
  layout_.device_bytes += k * ty.row_bytes + map_bytes;
  layout_.host_bytes += host_rows * ty.row_bytes;
  layout_.device_rows += k;
  layout_.host_rows += host_rows - std::ssize(host_slots);
  layout_.host_cached_rows += std::ssize(host_cached);
  layout_.remote_rows += t.num_nodes - host_rows - std::ssize(remote_ids);
  ty.has_remote = t.num_nodes - host_rows - std::ssize(remote_ids) > 0;
  // Batches gathered before stay on the GPU for the remote rows they hold (and host rows) to
  // be copied from, where some rows are remote and the gather kernel reads the host tier.
  if (options.reuse_batches > 0 && ty.has_remote && device_.is_cuda() &&
      (ty.host_view.defined() || !ty.host_table.defined())) {
    ty.reuse = std::make_unique<Type::Reuse>();
    ty.reuse->slots = std::min(options.reuse_batches + 1, kMaxReusedBatches);
    const auto on = torch::TensorOptions().device(device_);
    ty.reuse->last = torch::full({t.num_nodes}, -1, on.dtype(torch::kInt32));
    ty.reuse->reused = torch::zeros({1}, on.dtype(torch::kInt64));
  }
  return absl::OkStatus();
}

absl::Status FeatureStore::LoadShare(int type, const FeatureStoreOptions& options) {
  const client::NodeTypeInfo& t = metadata_.node_types[static_cast<size_t>(type)];
  types_.push_back(std::make_unique<Type>());
  Type& ty = *types_.back();
  if (t.feat_dim == 0) return absl::OkStatus();
  const DeviceTierGroup& g = *options.shared;
  if (!device_.is_cuda() || options.comm == nullptr || !g.ok) {
    return absl::FailedPreconditionError(
        "--device-tier shared: needs GPU trainers that reach each other's memory" +
        (g.why_not.empty() ? std::string() : " (" + g.why_not + ")"));
  }
  const int64_t shares = std::ssize(g.ranks);
  ty.dim = t.feat_dim;
  ty.row_bytes = t.feat_dim * client::FeatureBytes(options.dtype);
  ty.shared = true;
  ty.share_rows = std::max<int64_t>(1, (t.num_nodes + shares - 1) / shares);
  ty.share_lo = std::min(t.num_nodes, g.index * ty.share_rows);
  ty.share_hi = std::min(t.num_nodes, ty.share_lo + ty.share_rows);
  const int64_t rows = ty.share_hi - ty.share_lo;
  const int64_t bytes = std::max<int64_t>(rows, 1) * ty.row_bytes;
  // Every step below ends in a collective that every rank reaches, so a rank that fails stops
  // the others with it (a named error on each) instead of leaving them to a collective's timeout.
  std::string handle, why;
  absl::Status loaded = absl::OkStatus();
  ty.own_share = AllocateShareable(device_.index(), static_cast<size_t>(bytes), &handle, &why);
  if (ty.own_share == nullptr) {
    loaded = absl::ResourceExhaustedError(
        absl::StrCat("--device-tier shared: this GPU's share of '", t.name, "' rows (", bytes >> 20,
                     " MiB) does not fit on ", device_.str(), " (", why, ")"));
  }
  const torch::Dtype dtype = TorchDtype(options.dtype);
  if (loaded.ok() && rows > 0) {
    ty.device_table = torch::from_blob(ty.own_share, {rows, t.feat_dim},
                                       torch::TensorOptions().dtype(dtype).device(device_));
    // The parts that hold the share's ids (ids are numbered part by part).
    std::vector<bool> parts(static_cast<size_t>(metadata_.num_parts), false);
    int64_t first_id = -1;
    for (int p = 0; p < metadata_.num_parts; ++p) {
      const int64_t a = t.part_offsets[static_cast<size_t>(p)];
      const int64_t b = t.part_offsets[static_cast<size_t>(p) + 1];
      if (a < ty.share_hi && b > ty.share_lo && b > a) {
        parts[static_cast<size_t>(p)] = true;
        if (first_id < 0) first_id = a;
      }
    }
    loaded = client::ReadFeatureRows(
        metadata_, type, options.dtype, client_of_, options.rows_per_call,
        [&](int64_t first_row, int64_t n, std::string chunk) -> absl::Status {
          const int64_t a = std::max(first_id + first_row, ty.share_lo);
          const int64_t b = std::min(first_id + first_row + n, ty.share_hi);
          if (a >= b) return absl::OkStatus();
          torch::Tensor rows_in =
              torch::from_blob(chunk.data(), {n, t.feat_dim}, torch::TensorOptions().dtype(dtype));
          ty.device_table.narrow(0, a - ty.share_lo, b - a)
              .copy_(rows_in.narrow(0, a - first_id - first_row, b - a));  // synchronous
          return absl::OkStatus();
        },
        parts);
  }
  // Every share's handle (or where it failed), then the others mapped here. Every rank takes
  // the same outcome: where a share did not fit, ResourceExhausted on each (auto falls back
  // alike, train.cc).
  ASSIGN_OR_RETURN(const std::vector<std::string> published,
                   client::AllGatherStrings(*options.comm,
                                            loaded.ok() ? client::PublishedShare(handle)
                                                        : client::PublishedShareFailure(loaded),
                                            512));
  RETURN_IF_ERROR(client::SharesLoaded(published, t.name, loaded));
  std::vector<uint64_t> where(static_cast<size_t>(shares));
  std::string not_mapped;
  std::vector<std::string> peer_handles;  // VMM shares are handed over a socket (host_register.h)
  for (int64_t i = 0; i < shares; ++i) {
    if (i == g.index) continue;
    peer_handles.push_back(
        client::SharedHandle(published[static_cast<size_t>(g.ranks[static_cast<size_t>(i)])]));
  }
  if (!StartServingShare(ty.own_share, peer_handles, &why)) {
    not_mapped = absl::StrCat("--device-tier shared: cannot hand this rank's share of '", t.name,
                              "' rows to the host's other trainers: ", why);
  }
  for (int64_t i = 0; i < shares && not_mapped.empty(); ++i) {
    if (i == g.index) {
      where[static_cast<size_t>(i)] = reinterpret_cast<uint64_t>(ty.own_share);
      continue;
    }
    const int rank = g.ranks[static_cast<size_t>(i)];
    void* peer =
        OpenPeer(device_.index(), client::SharedHandle(published[static_cast<size_t>(rank)]), &why);
    if (peer == nullptr) {
      not_mapped = absl::StrCat("--device-tier shared: cannot map rank ", rank, "'s share of '",
                                t.name, "' rows on ", device_.str(), ": ", why);
      break;
    }
    ty.peer_shares.push_back(peer);
    where[static_cast<size_t>(i)] = reinterpret_cast<uint64_t>(peer);
  }
  if (std::string served; !FinishServingShare(ty.own_share, &served) && not_mapped.empty()) {
    not_mapped = absl::StrCat("--device-tier shared: this rank's share of '", t.name,
                              "' rows did not reach the host's other trainers: ", served);
  }
  int64_t mapped[1] = {not_mapped.empty() ? 1 : 0};
  RETURN_IF_ERROR(options.comm->AllReduce(absl::MakeSpan(mapped), client::ReduceOp::kSum));
  if (!not_mapped.empty()) return absl::FailedPreconditionError(not_mapped);
  if (mapped[0] != options.comm->world_size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device-tier shared: another rank could not map its host's shares of '",
                     t.name, "' rows (its log says why)"));
  }
  ty.shares = torch::from_blob(where.data(), {shares}, torch::kInt64).to(device_);
  ty.probe = {.device = static_cast<int>(device_.index()),
              .shares = where,
              .own_share = g.index,
              .num_rows = t.num_nodes,
              .dir = SharedTierProbeDir()};
  layout_.device_bytes += rows * ty.row_bytes;
  layout_.device_rows += rows;
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> FeatureStore::Rows(int type, const torch::Tensor& ids,
                                                 client::FeatureTierCounts* tiers) const {
  const Type& ty = *types_[static_cast<size_t>(type)];
  const int64_t n = ids.size(0);
  if (ty.dim == 0) return torch::empty({n, 0}, torch::TensorOptions().device(ids.device()));
  const double pcie = device_.is_cuda() ? static_cast<double>(ty.row_bytes) : 0;
  if (ty.whole) {
    tiers->device_rows += static_cast<double>(n);
    return ty.device_table.index_select(0, ids);
  }
  if (ty.shared) {
    torch::Tensor out = Empty(n, ty.dim, dtype_, device_);
    // This GPU's own rows, counted (reading the count waits for the device, as the tiers' do).
    const int64_t own = ids.ge(ty.share_lo).logical_and(ids.lt(ty.share_hi)).sum().item<int64_t>();
    const ShardedGatherArgs args{.ids = ids.data_ptr<int64_t>(),
                                 .n = n,
                                 .shares = reinterpret_cast<const uint64_t*>(ty.shares.data_ptr()),
                                 .share_rows = ty.share_rows,
                                 .out = out.data_ptr(),
                                 .row_bytes = ty.row_bytes};
    void* stream = CurrentCudaStream(device_.index());
    std::string why;
    const bool probed =
        !ty.probe.dir.empty() &&
        ProbeSharedGather(ty.probe, args, ty.gathers.fetch_add(1), stream, std::cerr);
    if (!probed && !LaunchShardedGather(args, stream, &why)) return absl::InternalError(why);
    tiers->device_rows += static_cast<double>(own);
    tiers->peer_rows += static_cast<double>(n - own);
    tiers->peer_bytes += static_cast<double>(n - own) * static_cast<double>(ty.row_bytes);
    return out;
  }
  torch::Tensor out = Empty(n, ty.dim, dtype_, device_);
  // The remote rows' positions first: nonzero() waits for the device, so before the gathers
  // are queued, and only where the store has remote rows.
  const torch::Tensor codes = ty.code.index_select(0, ids);
  const torch::Tensor remote =
      ty.has_remote ? codes.eq(kRemote).nonzero().view(-1) : torch::Tensor();
  const int64_t m = remote.defined() ? remote.numel() : 0;
  int64_t host_n = 0, cached_n = 0;
  std::string why_not;
  const bool kernel_can_read_host = ty.host_view.defined() || !ty.host_table.defined();
  int64_t reused_n = 0;  // host rows copied from earlier batches (counted a batch late)
  std::unique_lock<std::mutex> reusing;
  if (device_.is_cuda() && kernel_can_read_host) {
    // The tiers' counts before the kernel is queued (reading them waits for the device, so
    // also for the batches before: their copied rows are counted here).
    std::vector<torch::Tensor> parts = {codes.ge(0).sum(), codes.le(kHostBase).sum()};
    if (ty.reuse) {
      reusing = std::unique_lock<std::mutex>(ty.reuse->mu);
      parts.push_back(ty.reuse->reused[0]);
    }
    const torch::Tensor counts = torch::stack(parts).to(torch::kCPU);
    cached_n = counts[0].item<int64_t>();
    host_n = counts[1].item<int64_t>();
    if (ty.reuse) {
      reused_n = counts[2].item<int64_t>() - ty.reuse->counted;
      ty.reuse->counted += reused_n;
    }
  }
  void* stream = device_.is_cuda() ? CurrentCudaStream(device_.index()) : nullptr;
  ReusedBatches reuse = reusing.owns_lock() ? ty.reuse->Next(stream) : ReusedBatches{};
  torch::Tensor found;  // remote rows copied from earlier batches (ReusedBatches::found)
  if (reuse.last != nullptr && m > 0) {
    found = torch::zeros({n}, torch::TensorOptions().dtype(torch::kUInt8).device(device_));
    reuse.found = found.data_ptr<uint8_t>();
  }
  if (device_.is_cuda() && kernel_can_read_host &&
      LaunchTieredGather({.ids = ids.data_ptr<int64_t>(),
                          .n = n,
                          .code = ty.code.data_ptr<int32_t>(),
                          .device_rows = ty.device_table.data_ptr(),
                          .host_rows = ty.host_view.defined() ? ty.host_view.data_ptr() : nullptr,
                          .out = out.data_ptr(),
                          .row_bytes = ty.row_bytes,
                          .reuse = reuse},
                         stream, &why_not)) {
    // Queued: one kernel for both tiers, nothing waited for. Its ids and rows stay for the
    // next batches (a copy of the ids: the caller's tensor may be a buffer it refills).
    if (reuse.last != nullptr) {
      ty.reuse->ids[reuse.slot] = ids.clone();
      ty.reuse->rows[reuse.slot] = out;
    }
  } else {
    // torch's gathers: each tier's positions on the host first (nonzero), then its rows.
    const torch::Tensor cached = codes.ge(0).nonzero().view(-1);
    const torch::Tensor in_host = codes.le(kHostBase).nonzero().view(-1);
    cached_n = cached.numel();
    host_n = in_host.numel();
    if (cached_n > 0) {
      out.index_copy_(
          0, cached,
          ty.device_table.index_select(0, codes.index_select(0, cached).to(torch::kLong)));
    }
    if (host_n > 0) {
      const torch::Tensor rows = codes.index_select(0, in_host).to(torch::kLong).neg_() + kHostBase;
      out.index_copy_(0, in_host,
                      ty.host_view.defined()
                          ? ty.host_view.index_select(0, rows)
                          : ty.host_table.index_select(0, rows.to(torch::kCPU)).to(device_));
    }
  }
  if (!why_not.empty()) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      std::cerr << "graphshard-trainer: " << why_not << "; the feature store gathers with torch\n";
    }
  }
  // The remote rows to fetch: all, or those the kernel did not find in earlier batches (reading
  // which waits for it).
  torch::Tensor fetch = remote;
  if (found.defined()) {
    fetch = remote.index_select(0, found.index_select(0, remote).eq(0).nonzero().view(-1));
  }
  const int64_t f = fetch.defined() ? fetch.numel() : 0;
  if (f > 0) {
    const torch::Tensor fetch_ids = ids.index_select(0, fetch).to(torch::kCPU).contiguous();
    // Fetched while the device gathers the other tiers' rows, straight into page-locked memory
    // (the host allocator's cache: no buffer made or zeroed per batch), copied by DMA on the
    // current stream; the allocator keeps the block until that copy is done.
    const torch::Tensor staging = torch::empty(
        {f, ty.dim},
        torch::TensorOptions().dtype(TorchDtype(dtype_)).pinned_memory(device_.is_cuda()));
    const absl::Status fetched = client::GatherRowsByIdInto(
        metadata_, type, dtype_, client_of_,
        absl::MakeConstSpan(fetch_ids.data_ptr<int64_t>(), static_cast<size_t>(f)),
        kRemoteRowsPerCall, remote_route_,
        absl::MakeSpan(static_cast<char*>(staging.data_ptr()),
                       static_cast<size_t>(f) * static_cast<size_t>(ty.row_bytes)));
    if (!fetched.ok()) {
      // This batch's rows are incomplete: no later batch may copy from them.
      if (reuse.last != nullptr) {
        ty.reuse->ids[reuse.slot] = ty.reuse->rows[reuse.slot] = torch::Tensor();
      }
      return fetched;
    }
    out.index_copy_(0, fetch, staging.to(device_, /*non_blocking=*/true));
  }
  tiers->device_rows += static_cast<double>(cached_n);
  tiers->host_rows += static_cast<double>(host_n);
  tiers->remote_rows += static_cast<double>(m);
  tiers->reused_rows += static_cast<double>(reused_n + m - f);
  tiers->pcie_bytes += static_cast<double>(host_n - reused_n + f) * pcie;
  tiers->network_bytes += static_cast<double>(f) * static_cast<double>(ty.row_bytes);
  return out;
}

}  // namespace graphshard::trainer
