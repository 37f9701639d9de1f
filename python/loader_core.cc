#include "python/loader_core.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/feature_rows.h"
#include "client/part_directory.h"
#include "common/secret.h"
#include "common/status_macros.h"
#include "shm/ring.h"

namespace graphshard::python {
namespace {

absl::Status CheckOptions(const LoaderOptions& o) {
  if (o.registry_dir.empty() == o.servers.empty()) {
    return absl::InvalidArgumentError("give exactly one of registry=DIR and servers=[...]");
  }
  if (o.split != "train" && o.split != "val" && o.split != "test") {
    return absl::InvalidArgumentError(
        absl::StrCat("split='", o.split, "': expected 'train', 'val' or 'test'"));
  }
  if (o.fanouts.empty()) return absl::InvalidArgumentError("num_neighbors is empty");
  for (int32_t f : o.fanouts) {
    if (f == 0 || f < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_neighbors has ", f, ": expected >= 1, or -1 for every neighbor"));
    }
  }
  if (o.batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("batch_size=", o.batch_size, ": must be >= 1"));
  }
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", o.rank, " with world_size ", o.world_size,
                     ": expected 0 <= rank < world_size"));
  }
  if (o.max_held_batches < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_held_batches=", o.max_held_batches, ": must be >= 1"));
  }
  if (!(o.server_wait_s > 0) || !(o.rpc_timeout_s > 0) || !(o.stall_timeout_s > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server_wait_s=", o.server_wait_s, ", rpc_timeout_s=", o.rpc_timeout_s,
        ", stall_timeout_s=", o.stall_timeout_s, ": each must be > 0"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoaderCore>> LoaderCore::Connect(const LoaderOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  client::DiscoveryOptions d;
  d.registry_dir = options.registry_dir;
  d.servers = options.servers;
  d.server_wait_s = options.server_wait_s;
  d.client.rpc_timeout_s = options.rpc_timeout_s;
  d.client.stall_timeout_s = options.stall_timeout_s;
  ASSIGN_OR_RETURN(d.client.rpc.token, common::LoadJobToken(options.token_file));
  ASSIGN_OR_RETURN(client::ServerSet servers, client::ConnectServers(d));
  auto core = std::unique_ptr<LoaderCore>(new LoaderCore(options, std::move(servers)));
  core->host_id_ = shm::HostId();
  return core;
}

void LoaderCore::SetRingMapHooks(const shm::ShmRingReader::MapHooks& hooks) {
  for (auto& client : servers_.clients) client->SetRingMapHooks(hooks);
}

absl::Status LoaderCore::SetInputNodes(const std::string& seed_type, std::vector<int64_t> ids) {
  const client::ServerMetadata& md = servers_.metadata;
  const std::string type = seed_type.empty() ? md.target_type : seed_type;
  const client::NodeTypeInfo* info = nullptr;
  for (const client::NodeTypeInfo& t : md.node_types) {
    if (t.name == type) info = &t;
  }
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("input_nodes: the graph has no node type '", type, "'"));
  }
  if (ids.empty()) return absl::InvalidArgumentError("input_nodes: no node ids");
  if (std::ssize(info->part_offsets) != md.num_parts + 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("input_nodes: the servers do not say which '", type, "' ids each part owns"));
  }
  std::vector<int64_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front() < 0 || sorted.back() >= info->num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("input_nodes: id ", sorted.front() < 0 ? sorted.front() : sorted.back(),
                     " is outside '", type, "' ids 0..", info->num_nodes - 1));
  }
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input_nodes: id ", *dup, " appears twice (the servers seed distinct ids)"));
  }
  options_.seed_type = type;
  options_.input_nodes = std::move(ids);
  return absl::OkStatus();
}

absl::Status LoaderCore::SetLink(const client::StreamOptions::Link& link) {
  for (const client::EdgeTypeInfo& e : servers_.metadata.edge_types) {
    if (e.name != link.edge_type) continue;
    for (const auto& split : e.split_sizes) {
      if (split.first != options_.split) continue;
      options_.link = link;
      options_.link.split = options_.split;
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "edge type '", link.edge_type, "' has no '", options_.split,
        "' edge split in this partition (partition it with --edge-split TRAIN,VAL,TEST)"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the graph has no edge type '", link.edge_type, "'"));
}

absl::StatusOr<std::vector<int64_t>> LoaderCore::PartSeeds(int part) {
  client::PartitionClient& client = *servers_.clients[static_cast<size_t>(part)];
  if (!options_.link.edge_type.empty()) {
    return client.GetSplit(options_.split, options_.link.edge_type);
  }
  if (!options_.input_nodes.has_value()) return client.GetSplit(options_.split);
  // The given ids this part owns, in the order given.
  const client::ServerMetadata& md = servers_.metadata;
  const std::vector<int64_t>* offsets = nullptr;
  for (const client::NodeTypeInfo& t : md.node_types) {
    if (t.name == options_.seed_type) offsets = &t.part_offsets;
  }
  assert(offsets != nullptr && std::ssize(*offsets) == md.num_parts + 1);  // SetInputNodes
  const int64_t lo = (*offsets)[static_cast<size_t>(part)];
  const int64_t hi = (*offsets)[static_cast<size_t>(part) + 1];
  std::vector<int64_t> owned;
  for (int64_t id : *options_.input_nodes) {
    if (id >= lo && id < hi) owned.push_back(id);
  }
  return owned;
}

absl::Status LoaderCore::Assign(const std::vector<std::string>& rank_hosts) {
  if (std::ssize(rank_hosts) != options_.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(rank_hosts.size(), " host ids for world_size ",
                                                   options_.world_size));
  }
  ASSIGN_OR_RETURN(shares_, client::AssignHostLocal(options_.rank, rank_hosts, servers_.host_ids,
                                                    options_.assignment));
  shards_.clear();
  for (const client::ServerShare& share : shares_) {
    ASSIGN_OR_RETURN(std::vector<int64_t> ids, PartSeeds(share.part));
    absl::Span<const int64_t> chunk = client::ChunkOf(ids, share.chunk, share.num_chunks);
    shards_.push_back({share.part, std::vector<int64_t>(chunk.begin(), chunk.end())});
  }
  assigned_ = true;
  return absl::OkStatus();
}

int64_t LoaderCore::natural_steps() const {
  int64_t n = 0;
  for (const client::ShardSeeds& s : shards_) {
    n += client::NaturalBatches(std::ssize(s.ids), options_.batch_size);
  }
  return n;
}

int64_t LoaderCore::num_seeds() const {
  int64_t n = 0;
  for (const client::ShardSeeds& s : shards_) n += std::ssize(s.ids);
  return n;
}

absl::Status LoaderCore::StartEpoch(int64_t epoch, int64_t steps) {
  if (!assigned_) return absl::FailedPreconditionError("StartEpoch before Assign");
  const int64_t natural = natural_steps();
  if (steps < natural) {
    return absl::InvalidArgumentError(
        absl::StrCat(steps, " steps for ", natural, " batches of this rank"));
  }
  if (!streams_.empty() && !broken_ && epoch == epoch_ + 1 && epoch <= last_epoch_ &&
      steps == steps_ && next_step_ == step_stream_.size()) {
    epoch_ = epoch;  // the open streams go on into this epoch (already being built)
    next_step_ = 0;
    return absl::OkStatus();
  }
  streams_.clear();  // the open streams end (cancelled when unfinished) first
  broken_ = false;
  // Epochs a stream spans: plenty for a training run, far below the servers' limit.
  constexpr int64_t kEpochsPerStream = 1024;
  const int64_t num_epochs =
      std::min(kEpochsPerStream, std::numeric_limits<int64_t>::max() - epoch);
  std::vector<int64_t> per_stream;
  for (const client::ShardSeeds& s : shards_) {
    per_stream.push_back(client::NaturalBatches(std::ssize(s.ids), options_.batch_size));
  }
  const client::EpochSchedule schedule = client::ScheduleEpoch(per_stream, steps);
  streams_.resize(shards_.size());
  for (size_t i = 0; i < shards_.size(); ++i) {
    if (schedule.stream_batches[i] == 0) continue;
    client::StreamOptions so;
    so.seeds = shards_[i].ids;
    so.seed_type = options_.seed_type;
    so.link = options_.link;
    so.batch_size = options_.batch_size;
    so.shuffle = options_.shuffle;
    so.shuffle_seed = client::StreamShuffleSeed(options_.seed, shards_[i].part);
    so.epoch = epoch;
    so.num_batches = schedule.stream_batches[i];
    so.num_epochs = num_epochs;
    so.fanouts = options_.fanouts;
    so.replace = options_.replace;
    so.feature_dtype = options_.feature_dtype;
    so.client_host_id = host_id_;
    so.max_held_batches = options_.max_held_batches;
    so.without_features = options_.without_features;
    ASSIGN_OR_RETURN(streams_[i],
                     servers_.clients[static_cast<size_t>(shards_[i].part)]->StreamBatches(
                         so, servers_.metadata));
  }
  step_stream_ = schedule.step_stream;
  next_step_ = 0;
  epoch_ = epoch;
  last_epoch_ = epoch + num_epochs - 1;
  steps_ = steps;
  return absl::OkStatus();
}

absl::Status LoaderCore::FeatureRows(int type, absl::Span<char> out, int64_t rows_per_call) {
  const client::ServerMetadata& md = servers_.metadata;
  if (type < 0 || type >= std::ssize(md.node_types)) {
    return absl::InvalidArgumentError(absl::StrCat("node type ", type, " of ",
                                                   md.node_types.size()));
  }
  const client::NodeTypeInfo& t = md.node_types[static_cast<size_t>(type)];
  const int64_t row_bytes = t.feat_dim * client::FeatureBytes(options_.feature_dtype);
  if (std::ssize(out) != t.num_nodes * row_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("'", t.name, "' rows need ",
                                                   t.num_nodes * row_bytes, " bytes, not ",
                                                   out.size()));
  }
  // A live replica of each part (the registry read anew), as the trainer's store loads.
  const client::ClientOf client_of = [this](int part) -> absl::StatusOr<client::PartitionClient*> {
    ASSIGN_OR_RETURN(
        client::PartDirectory::LiveServer live,
        servers_.directory->Live(part, options_.rank, &servers_.metadata,
                                 absl::Now() + absl::Seconds(options_.server_wait_s), host_id_));
    return live.client;
  };
  // ReadFeatureRows hands over each row once, inside the type's range: `out` holds them all.
  return client::ReadFeatureRows(
      md, type, options_.feature_dtype, client_of, rows_per_call,
      [&](int64_t first_row, int64_t n, std::string rows) -> absl::Status {
        std::memcpy(out.data() + first_row * row_bytes, rows.data(),
                    static_cast<size_t>(n * row_bytes));
        return absl::OkStatus();
      });
}

absl::StatusOr<LoaderStep> LoaderCore::Next() {
  LoaderStep step;
  if (next_step_ >= step_stream_.size()) {
    step.end = true;  // the streams stay open: they go on into the next epoch
    return step;
  }
  const int s = step_stream_[next_step_++];
  if (s < 0) return step;
  step.part = shards_[static_cast<size_t>(s)].part;
  absl::StatusOr<absl::optional<client::MinibatchData>> batch =
      streams_[static_cast<size_t>(s)]->Next();
  if (!batch.ok()) {
    broken_ = true;
    return batch.status();
  }
  step.batch = *std::move(batch);
  if (!step.batch.has_value()) {
    broken_ = true;
    return absl::DataLossError(absl::StrCat("the stream of part ", step.part,
                                            " ended before step ", next_step_ - 1,
                                            " (the server sent too few batches)"));
  }
  if (step.batch->epoch != epoch_) {
    broken_ = true;
    return absl::DataLossError(absl::StrCat("the server of part ", step.part,
                                            " sent a batch of epoch ", step.batch->epoch,
                                            " at step ", next_step_ - 1, " of epoch ", epoch_));
  }
  return step;
}

}  // namespace graphshard::python
