#include "server/engine/minibatch_builder.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "server/engine/internal/ask_parts.h"
#include "server/engine/internal/build_minibatch.h"
#include "server/engine/internal/node_index.h"
#include "server/engine/request_cost.h"

namespace graphshard::engine {
namespace {

using internal::NodeIndex;

// How many neighbours ahead the merge prefetches their relabelling slot.
constexpr int64_t kPrefetchAhead = 8;
// How many feature rows ahead the gather prefetches.
constexpr size_t kRowsAhead = 4;

// How many nodes a long loop goes between two looks at the request's CancelFn.
constexpr size_t kCancelCheckEvery = 4096;

absl::Status CheckCancelled(const MinibatchRequest& request) {
  if (request.cancelled && request.cancelled()) {
    return absl::CancelledError("the request was cancelled");
  }
  return absl::OkStatus();
}

// Where the sample of frontier node j for edge type e lives: part, item, position in the item.
struct Slot {
  int part = 0;
  int item = 0;
  int64_t pos = 0;
};

absl::Status ValidateSeeds(const LocalPart& local, const MinibatchRequest& r, int seed_type) {
  const Limits& lim = local.limits();
  if (r.seeds.empty()) return absl::InvalidArgumentError("empty batch: no seeds");
  if (std::ssize(r.seeds) > lim.max_batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("batch of ", r.seeds.size(),
                                                   " seeds exceeds the limit ",
                                                   lim.max_batch_size));
  }
  return local.CheckOwned(seed_type, r.seeds, "seeds");
}

// One hop: asks every owner once (all edge types), then merges in edge type order, frontier
// order. Appends the new nodes and this hop's edges.
// `seed_times` (temporal only): the time of each tree, inherited by every node sampled in it.
// `link`: a link batch's edges to leave out (its supervision edges), or nullptr.
absl::Status RunHop(const LocalPart& local, Peers& peers, const MinibatchRequest& request,
                    const std::vector<int64_t>& seed_times, int hop,
                    std::vector<NodeIndex>& types, std::vector<EdgeBlock>& edges,
                    const internal::LinkSeeds* link, BuildProfile& profile) {
  const bool temporal = request.sampling.temporal != TemporalMode::kOff;
  const int k = local.num_parts();
  const auto& etypes = local.edge_types();
  std::vector<int64_t> frontier_end(types.size());
  for (size_t t = 0; t < types.size(); ++t) frontier_end[t] = std::ssize(types[t].ids);

  std::vector<OneHopRequest> requests(k);
  std::vector<bool> asked(k, false);
  std::vector<std::vector<Slot>> slots(etypes.size());
  const uint64_t hop_seed = common::MixSeed(request.seed, static_cast<uint64_t>(hop));
  for (size_t e = 0; e < etypes.size(); ++e) {
    const int32_t fanout = FanoutOf(request.sampling, etypes[e].name, hop);
    const NodeIndex& dst = types[etypes[e].dst];
    if (fanout == 0 || dst.frontier_begin == frontier_end[etypes[e].dst]) continue;
    std::vector<int> item_of(k, -1);
    const common::PartitionBook& book = *local.node_types()[etypes[e].dst].book;
    slots[e].reserve(static_cast<size_t>(frontier_end[etypes[e].dst] - dst.frontier_begin));
    for (int64_t j = dst.frontier_begin; j < frontier_end[etypes[e].dst]; ++j) {
      int p = book.Owner(dst.ids[j]);
      if (item_of[p] < 0) {
        item_of[p] = static_cast<int>(requests[p].items.size());
        requests[p].items.push_back(
            {etypes[e].name, {}, fanout, common::MixSeed(hop_seed, static_cast<uint64_t>(e))});
        asked[p] = true;
      }
      HopItem& item = requests[p].items[item_of[p]];
      slots[e].push_back({p, item_of[p], std::ssize(item.seeds)});
      item.seeds.push_back(dst.ids[j]);
      if (temporal) item.times.push_back(seed_times[dst.tree[j]]);
    }
  }
  // Item sizes, kept because AskParts moves the requests out.
  std::vector<std::vector<size_t>> item_sizes(k);
  for (int p = 0; p < k; ++p) {
    requests[p].replace = request.sampling.replace;
    requests[p].temporal = request.sampling.temporal;
    requests[p].temporal_strategy = request.sampling.temporal_strategy;
    for (const HopItem& item : requests[p].items) item_sizes[p].push_back(item.seeds.size());
  }

  int64_t requests_sent = 0;  // on this thread: AskParts calls `remote` before it waits
  ASSIGN_OR_RETURN(
      auto results,
      (internal::AskParts<std::vector<HopResult>>(
          requests, asked, local.part_index(),
          [&](int p, OneHopRequest r, Peers::Callback<std::vector<HopResult>> done) {
            if (const LocalPart* mapped = peers.SamplingPart(p)) {
              done(mapped->SampleOneHop(r, request.cancelled));  // a same-host peer's part
              return;
            }
            ++requests_sent;
            peers.SampleOneHop(p, std::move(r), std::move(done));
          },
          [&](const OneHopRequest& r) { return local.SampleOneHop(r, request.cancelled); })));
  profile.peer_requests += requests_sent;
  profile.peer_rounds += requests_sent > 0 ? 1 : 0;

  // Offsets of each seed's neighbours inside its item's result.
  std::vector<std::vector<std::vector<int64_t>>> offsets(k);
  for (int p = 0; p < k; ++p) {
    if (!results[p].has_value()) continue;
    if (results[p]->size() != item_sizes[p].size()) {
      return absl::InternalError(absl::StrCat("part ", p, " answered ", results[p]->size(),
                                              " items for ", item_sizes[p].size()));
    }
    offsets[p].resize(results[p]->size());
    for (size_t i = 0; i < results[p]->size(); ++i) {
      const HopResult& r = (*results[p])[i];
      if (r.counts.size() != item_sizes[p][i]) {
        return absl::InternalError(absl::StrCat("part ", p, " answered a malformed hop result"));
      }
      std::vector<int64_t>& off = offsets[p][i];
      off.assign(r.counts.size() + 1, 0);
      for (size_t s = 0; s < r.counts.size(); ++s) off[s + 1] = off[s] + r.counts[s];
      if (off.back() != std::ssize(r.neighbors)) {
        return absl::InternalError(absl::StrCat("part ", p, " answered a malformed hop result"));
      }
    }
  }
  for (size_t e = 0; e < etypes.size(); ++e) {
    EdgeBlock& block = edges[e];
    const int64_t before = std::ssize(block.src);
    NodeIndex& src = types[etypes[e].src];
    const NodeIndex& dst = types[etypes[e].dst];
    const int64_t num_src = local.node_types()[etypes[e].src].book->num_nodes();
    int64_t edges_of_type = 0;
    for (const Slot& slot : slots[e]) {
      const std::vector<int64_t>& off = offsets[slot.part][slot.item];
      edges_of_type += off[slot.pos + 1] - off[slot.pos];
    }
    block.src.reserve(block.src.size() + static_cast<size_t>(edges_of_type));
    block.dst.reserve(block.dst.size() + static_cast<size_t>(edges_of_type));
    for (size_t s = 0; s < slots[e].size(); ++s) {
      if (s % kCancelCheckEvery == kCancelCheckEvery - 1) RETURN_IF_ERROR(CheckCancelled(request));
      const Slot& slot = slots[e][s];
      const HopResult& r = (*results[slot.part])[slot.item];
      const std::vector<int64_t>& off = offsets[slot.part][slot.item];
      const int64_t j = dst.frontier_begin + static_cast<int64_t>(s);
      const int64_t tree = dst.tree[j];
      const int64_t first = off[slot.pos];
      const int64_t last = off[slot.pos + 1];
      for (int64_t n = first; n < last; ++n) {
        const int64_t id = r.neighbors[n];
        if (id < 0 || id >= num_src) {
          return absl::InternalError(absl::StrCat("part ", slot.part, " answered neighbour ", id,
                                                  " outside the ", num_src, " '",
                                                  local.node_types()[etypes[e].src].name,
                                                  "' nodes"));
        }
        if (n + kPrefetchAhead < std::ssize(r.neighbors)) {
          src.Prefetch(r.neighbors[n + kPrefetchAhead]);
        }
        if (link != nullptr && link->Excluded(e, id, dst.ids[j])) continue;
        block.src.push_back(src.Add(tree, id));
        block.dst.push_back(j);
      }
    }
    block.num_sampled_edges.push_back(std::ssize(block.src) - before);
  }
  for (size_t t = 0; t < types.size(); ++t) types[t].frontier_begin = frontier_end[t];
  return absl::OkStatus();
}

// The node shard of `node_type` in `part`, or nullptr.
const common::NodeShard* ShardOf(const LocalPart& part, const std::string& node_type) {
  const int t = part.NodeTypeIndex(node_type);
  return t < 0 ? nullptr : part.node_types()[t].shard;
}

// Without features (SamplingConfig::without_features): no rows, the seeds' labels only (the
// seeds are owned by the local part; link batches need none), -1 elsewhere. The placer still
// runs, with empty rows, so that the batch's other arrays go where they would.
absl::Status LabelSeedsOnly(const LocalPart& local, const MinibatchRequest& request,
                            Minibatch& batch) {
  // Labels first: the placer sizes the batch's memory by them.
  for (NodeBlock& block : batch.nodes) block.labels.assign(block.ids.size(), -1);
  if (request.place_features) {
    ASSIGN_OR_RETURN(std::vector<absl::Span<char>> out,
                     request.place_features(batch, std::vector<size_t>(batch.nodes.size(), 0)));
    if (out.size() != batch.nodes.size()) {
      return absl::InternalError("the feature placer returned the wrong number of spans");
    }
    for (size_t t = 0; t < batch.nodes.size(); ++t) {
      batch.nodes[t].placed = true;
      batch.nodes[t].placed_features = out[t];
    }
  }
  if (!batch.link.edge_type.empty()) return absl::OkStatus();
  for (NodeBlock& block : batch.nodes) {
    if (block.node_type != batch.seed_type) continue;
    const common::NodeShard* shard = ShardOf(local, block.node_type);
    const size_t seeds = std::min(request.seeds.size(), block.ids.size());
    for (size_t j = 0; j < seeds; ++j) {
      const int64_t id = block.ids[j];
      if (shard == nullptr || id < shard->begin || id >= shard->end) {
        return absl::InternalError(absl::StrCat("seed ", id, " of '", block.node_type,
                                                "' is not in the local part"));
      }
      block.labels[j] = shard->labels[id - shard->begin];
    }
  }
  return absl::OkStatus();
}

// Features and labels of every node, one request per owner covering every node type. Rows of
// parts readable in this process (our own, and same-host peers that `peers` mapped) are copied
// straight from the part into the output while the requests to the other owners are in flight:
// one copy instead of gather -> message -> decode -> output.
absl::Status GatherAll(const LocalPart& local, Peers& peers, const MinibatchRequest& request,
                       Minibatch& batch, BuildProfile& profile) {
  if (request.sampling.without_features) return LabelSeedsOnly(local, request, batch);
  const FeaturePlacer& place = request.place_features;
  std::vector<NodeBlock>& nodes = batch.nodes;
  const FeatureDtype dtype = batch.feature_dtype;
  const int k = local.num_parts();
  const int self = local.part_index();
  std::vector<const LocalPart*> direct(k, nullptr);
  std::vector<bool> looked_up(k, false);
  direct[self] = &local;
  looked_up[self] = true;
  std::vector<std::vector<TypedIds>> requests(k);
  std::vector<bool> asked(k, false);
  // where[t][j] = (part, item, row within item); item -1 = read directly from direct[part].
  std::vector<std::vector<Slot>> where(nodes.size());
  bool any_direct = false;
  for (size_t t = 0; t < nodes.size(); ++t) {
    std::vector<int> item_of(k, -1);
    const common::PartitionBook& book = *local.node_types()[t].book;
    where[t].reserve(nodes[t].ids.size());
    for (int64_t id : nodes[t].ids) {
      int p = book.Owner(id);
      if (!looked_up[p]) {
        direct[p] = peers.MappedPart(p);
        looked_up[p] = true;
      }
      if (direct[p] != nullptr) {
        where[t].push_back({p, -1, 0});
        any_direct = true;
        continue;
      }
      if (item_of[p] < 0) {
        item_of[p] = static_cast<int>(requests[p].size());
        requests[p].push_back({nodes[t].node_type, {}});
        asked[p] = true;
      }
      std::vector<int64_t>& ids = requests[p][item_of[p]].ids;
      where[t].push_back({p, item_of[p], std::ssize(ids)});
      ids.push_back(id);
    }
  }
  const size_t elem = static_cast<size_t>(common::FeatureBytes(dtype));
  std::vector<size_t> feature_bytes;
  for (NodeBlock& block : nodes) {
    feature_bytes.push_back(block.ids.size() * static_cast<size_t>(block.feat_dim) * elem);
    block.labels.resize(block.ids.size());
  }
  // out[t]: where block t's rows go.
  std::vector<absl::Span<char>> out(nodes.size());
  if (place) {
    ASSIGN_OR_RETURN(out, place(batch, feature_bytes));
    if (out.size() != nodes.size()) {
      return absl::InternalError("the feature placer returned the wrong number of spans");
    }
    for (size_t t = 0; t < nodes.size(); ++t) {
      if (out[t].size() != feature_bytes[t]) {
        return absl::InternalError("the feature placer returned a span of the wrong size");
      }
      nodes[t].placed = true;
      nodes[t].placed_features = out[t];
    }
  } else {
    for (size_t t = 0; t < nodes.size(); ++t) {
      nodes[t].features.resize(feature_bytes[t]);
      out[t] = absl::MakeSpan(nodes[t].features);
    }
  }
  // Runs as AskParts' local answer (asked[self] stands for every direct part): fills the rows
  // of the direct parts; the empty result is never read.
  auto write_direct =
      [&](const std::vector<TypedIds>&) -> absl::StatusOr<std::vector<FeatureBlock>> {
    for (size_t t = 0; t < nodes.size(); ++t) {
      NodeBlock& block = nodes[t];
      const size_t row_bytes = static_cast<size_t>(block.feat_dim) * elem;
      std::vector<const common::NodeShard*> shards(k, nullptr);
      for (size_t j = 0; j < block.ids.size(); ++j) {
        if (j % kCancelCheckEvery == kCancelCheckEvery - 1) {
          RETURN_IF_ERROR(CheckCancelled(request));
        }
        const Slot& s = where[t][j];
        if (s.item >= 0) continue;
        // Rows are random reads: fetch the row kRowsAhead ahead while this one is copied.
        if (j + kRowsAhead < block.ids.size() && row_bytes > 0) {
          const Slot& ahead = where[t][j + kRowsAhead];
          const common::NodeShard* shard_ahead =
              ahead.item < 0 ? shards[ahead.part] : nullptr;
          const int64_t id_ahead = block.ids[j + kRowsAhead];
          if (shard_ahead != nullptr && id_ahead >= shard_ahead->begin &&
              id_ahead < shard_ahead->end) {
            const char* row = reinterpret_cast<const char*>(
                shard_ahead->features.data() + (id_ahead - shard_ahead->begin) * block.feat_dim);
            for (size_t b = 0; b < static_cast<size_t>(block.feat_dim) * 4; b += 64) {
              __builtin_prefetch(row + b);
            }
            __builtin_prefetch(shard_ahead->labels.data() + (id_ahead - shard_ahead->begin));
          }
        }
        const common::NodeShard*& shard = shards[s.part];
        if (shard == nullptr) shard = ShardOf(*direct[s.part], block.node_type);
        const int64_t id = block.ids[j];
        if (shard == nullptr || shard->feat_dim != block.feat_dim || id < shard->begin ||
            id >= shard->end) {
          return absl::InternalError(absl::StrCat("part ", s.part,
                                                  " (read in this process) has no '",
                                                  block.node_type, "' row for id ", id));
        }
        if (row_bytes > 0) {
          WriteFeatureRow(*shard, id - shard->begin, dtype, out[t].data() + j * row_bytes);
        }
        block.labels[j] = shard->labels[id - shard->begin];
      }
    }
    return std::vector<FeatureBlock>{};
  };
  int64_t requests_sent = 0;  // on this thread: AskParts calls `remote` before it waits
  asked[self] = any_direct;
  ASSIGN_OR_RETURN(
      auto results,
      (internal::AskParts<std::vector<FeatureBlock>>(
          requests, asked, self,
          [&](int p, std::vector<TypedIds> r, Peers::Callback<std::vector<FeatureBlock>> done) {
            ++requests_sent;
            peers.GatherFeatures(p, std::move(r), dtype, std::move(done));
          },
          write_direct)));
  profile.peer_requests += requests_sent;
  profile.peer_rounds += requests_sent > 0 ? 1 : 0;
  for (size_t t = 0; t < nodes.size(); ++t) {
    NodeBlock& block = nodes[t];
    const size_t row_bytes = static_cast<size_t>(block.feat_dim) * elem;
    for (size_t j = 0; j < block.ids.size(); ++j) {
      const Slot& s = where[t][j];
      if (s.item < 0) continue;
      if (!results[s.part].has_value() || std::ssize(*results[s.part]) <= s.item) {
        return absl::InternalError(absl::StrCat("part ", s.part, " answered too few blocks"));
      }
      const FeatureBlock& fb = (*results[s.part])[s.item];
      if (fb.feat_dim != block.feat_dim || std::ssize(fb.labels) <= s.pos ||
          !fb.HasRowsOf(static_cast<int64_t>(row_bytes))) {
        return absl::InternalError(absl::StrCat("part ", s.part, " answered a malformed block"));
      }
      if (row_bytes > 0) {
        std::memcpy(out[t].data() + j * row_bytes,
                    fb.Row(s.pos, static_cast<int64_t>(row_bytes)), row_bytes);
      }
      block.labels[j] = fb.labels[s.pos];
    }
  }
  return absl::OkStatus();
}

}  // namespace

int32_t FanoutOf(const SamplingConfig& config, const std::string& edge_type, int hop) {
  auto it = config.edge_fanouts.find(edge_type);
  if (it != config.edge_fanouts.end()) return it->second[hop];
  return config.fanouts.empty() ? 0 : config.fanouts[hop];
}

absl::StatusOr<int> ValidateSampling(const LocalPart& local, const SamplingConfig& config) {
  const Limits& lim = local.limits();
  size_t hops = config.fanouts.size();
  if (hops == 0 && !config.edge_fanouts.empty()) hops = config.edge_fanouts.begin()->second.size();
  if (hops == 0 || static_cast<int64_t>(hops) > lim.max_hops) {
    return absl::InvalidArgumentError(absl::StrCat(hops, " hops: need 1..", lim.max_hops,
                                                   " fanouts"));
  }
  auto check = [&](const std::vector<int32_t>& list, absl::string_view what) -> absl::Status {
    if (list.size() != hops) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has ", list.size(),
                                                     " hops, expected ", hops));
    }
    for (size_t h = 0; h < list.size(); ++h) {
      if (list[h] < -1 || list[h] > lim.max_fanout) {
        return absl::InvalidArgumentError(absl::StrCat(what, "[", h, "] = ", list[h],
                                                       " is outside -1..", lim.max_fanout));
      }
    }
    return absl::OkStatus();
  };
  if (!config.fanouts.empty()) RETURN_IF_ERROR(check(config.fanouts, "fanouts"));
  for (const auto& [name, list] : config.edge_fanouts) {
    if (local.EdgeTypeIndex(name) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("fanouts for unknown edge type '", name, "'"));
    }
    RETURN_IF_ERROR(check(list, absl::StrCat("fanouts of ", name)));
  }
  return static_cast<int>(hops);
}

absl::Status ValidateTemporal(const LocalPart& local, const SamplingConfig& config,
                              int seed_type, bool seed_times_given) {
  if (config.temporal == TemporalMode::kOff) return absl::OkStatus();
  if (config.temporal != TemporalMode::kAtOrBefore && config.temporal != TemporalMode::kBefore) {
    return absl::InvalidArgumentError("unknown temporal mode");
  }
  if (config.temporal_strategy != TemporalStrategy::kUniform &&
      config.temporal_strategy != TemporalStrategy::kLast) {
    return absl::InvalidArgumentError("unknown temporal strategy");
  }
  bool any = false;
  for (const EdgeType& e : local.edge_types()) any = any || e.shard->has_time;
  if (!any) {
    return absl::InvalidArgumentError(
        "temporal sampling: this partition has no times: no edge type has "
        "edges/<src>__<rel>__<dst>/time.npy (partition an input with edge_time.npy, or "
        "node_time.npy for the neighbours' times)");
  }
  const NodeType& t = local.node_types()[seed_type];
  if (!seed_times_given && !t.shard->has_time) {
    return absl::InvalidArgumentError(absl::StrCat(
        "temporal sampling from '", t.name, "' seeds needs their times: '", t.name,
        "' has no node times (nodes/", t.name, "/time.npy; partition an input with node_time",
        local.node_types().size() > 1 ? absl::StrCat("__", t.name) : "",
        ".npy), and the request gives no seed times"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Minibatch> BuildMinibatch(const LocalPart& local, Peers& peers,
                                         const MinibatchRequest& request) {
  int seed_type = request.seed_type.empty() ? local.target_type()
                                            : local.NodeTypeIndex(request.seed_type);
  if (seed_type < 0) {
    return absl::InvalidArgumentError(absl::StrCat("unknown node type '", request.seed_type, "'"));
  }
  RETURN_IF_ERROR(ValidateSeeds(local, request, seed_type));
  ASSIGN_OR_RETURN(int hops, ValidateSampling(local, request.sampling));
  RETURN_IF_ERROR(CheckCost(
      MinibatchCost(local, seed_type, std::ssize(request.seeds), request.sampling, hops),
      local.limits(), absl::StrCat("a minibatch of ", request.seeds.size(), " seeds")));
  RETURN_IF_ERROR(
      ValidateTemporal(local, request.sampling, seed_type, !request.seed_times.empty()));
  if (!request.seed_times.empty() && request.seed_times.size() != request.seeds.size()) {
    return absl::InvalidArgumentError(absl::StrCat(request.seed_times.size(), " seed times for ",
                                                   request.seeds.size(), " seeds"));
  }
  return internal::BuildCheckedMinibatch(local, peers, request, seed_type, hops, nullptr);
}

namespace internal {

absl::StatusOr<Minibatch> BuildCheckedMinibatch(const LocalPart& local, Peers& peers,
                                                const MinibatchRequest& request, int seed_type,
                                                int hops, const LinkSeeds* link) {
  // Temporal sampling is disjoint, as in PyG: each seed's tree carries its own time.
  const bool temporal = request.sampling.temporal != TemporalMode::kOff;
  const bool disjoint = request.sampling.disjoint || temporal;
  common::ThreadUsageClock clock;
  BuildProfile profile;
  std::vector<int64_t> seed_times;
  if (temporal) {
    if (!request.seed_times.empty()) {
      seed_times = request.seed_times;
    } else {
      const common::NodeShard& shard = *local.node_types()[seed_type].shard;
      seed_times.reserve(request.seeds.size());
      for (int64_t id : request.seeds) seed_times.push_back(shard.time[id - shard.begin]);
    }
  }

  std::vector<NodeIndex> types;
  types.reserve(local.node_types().size());
  for (const NodeType& t : local.node_types()) {
    const int64_t n = t.book->num_nodes();
    const bool dense = !disjoint && n <= internal::DenseTablePool::kMaxNodes;
    types.emplace_back(dense ? &local.relabel_tables() : nullptr, n);
  }
  LinkLabels labels;
  if (link != nullptr) {
    // Every endpoint is a seed (hop 0 of its type), each once (per tree), in order of first
    // appearance.
    const LinkPlan& plan = *link->plan;
    const auto m = link->src.size();
    labels.edge_type = local.edge_types()[static_cast<size_t>(plan.edge_type)].name;
    labels.num_pos = link->num_pos;
    labels.src.resize(m);
    labels.dst.resize(m);
    labels.label.assign(m, 0.0f);
    std::fill(labels.label.begin(), labels.label.begin() + link->num_pos, 1.0f);
    // Disjoint (temporal) link batches, as PyG's LinkNeighborLoader: every endpoint is sampled
    // in a tree of its own at its edge's time: the source of positive i is tree i (its negatives
    // share it: same node, same time, the same sample), the destination of supervision edge k
    // tree num_pos + k (a negative at its positive's time).
    const auto num_pos = static_cast<size_t>(link->num_pos);
    for (size_t i = 0; i < m; ++i) {
      const auto src_tree = disjoint ? static_cast<int64_t>(i % num_pos) : 0;
      const auto dst_tree = disjoint ? static_cast<int64_t>(num_pos + i) : 0;
      labels.src[i] = types[static_cast<size_t>(plan.src_type)].Add(src_tree, link->src[i]);
      labels.dst[i] = types[static_cast<size_t>(plan.dst_type)].Add(dst_tree, link->dst[i]);
    }
    if (temporal) {
      seed_times.assign(num_pos + m, 0);
      for (size_t i = 0; i < num_pos; ++i) seed_times[i] = link->time[i];
      for (size_t k = 0; k < m; ++k) seed_times[num_pos + k] = link->time[k];
    }
  }
  for (size_t i = 0; i < request.seeds.size(); ++i) {
    int64_t before = std::ssize(types[seed_type].ids);
    types[seed_type].Add(disjoint ? static_cast<int64_t>(i) : 0, request.seeds[i]);
    if (std::ssize(types[seed_type].ids) == before) {
      return absl::InvalidArgumentError(
          absl::StrCat("seed ", request.seeds[i], " appears twice in the batch"));
    }
  }
  std::vector<std::vector<int64_t>> sampled_nodes(types.size());
  for (size_t t = 0; t < types.size(); ++t) sampled_nodes[t].push_back(std::ssize(types[t].ids));
  std::vector<EdgeBlock> edges(local.edge_types().size());
  for (int hop = 0; hop < hops; ++hop) {
    RETURN_IF_ERROR(CheckCancelled(request));
    std::vector<int64_t> before(types.size());
    for (size_t t = 0; t < types.size(); ++t) before[t] = std::ssize(types[t].ids);
    RETURN_IF_ERROR(RunHop(local, peers, request, seed_times, hop, types, edges, link, profile));
    for (size_t t = 0; t < types.size(); ++t) {
      sampled_nodes[t].push_back(std::ssize(types[t].ids) - before[t]);
    }
  }

  clock.Lap(&profile.sample);
  Minibatch out;
  out.batch_size = link != nullptr ? std::ssize(labels.src) : std::ssize(request.seeds);
  out.seed_type = local.node_types()[seed_type].name;
  out.link = std::move(labels);
  out.feature_dtype = request.sampling.feature_dtype;
  out.features_omitted = request.sampling.without_features;
  for (size_t t = 0; t < types.size(); ++t) {
    NodeBlock block;
    block.node_type = local.node_types()[t].name;
    block.ids = std::move(types[t].ids);
    if (disjoint) block.tree = std::move(types[t].tree);
    block.feat_dim = local.node_types()[t].shard->feat_dim;
    block.num_sampled_nodes = std::move(sampled_nodes[t]);
    out.nodes.push_back(std::move(block));
  }
  for (size_t e = 0; e < edges.size(); ++e) {
    edges[e].edge_type = local.edge_types()[e].name;
    out.edges.push_back(std::move(edges[e]));
  }
  RETURN_IF_ERROR(CheckCancelled(request));
  RETURN_IF_ERROR(GatherAll(local, peers, request, out, profile));
  clock.Lap(&profile.gather);
  out.profile = profile;
  return out;
}

}  // namespace internal
}  // namespace graphshard::engine
