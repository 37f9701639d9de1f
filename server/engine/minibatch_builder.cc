#include "server/engine/minibatch_builder.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/engine/internal/build_minibatch.h"
#include "server/engine/internal/minibatch_steps.h"
#include "server/engine/internal/node_index.h"
#include "server/engine/request_cost.h"

namespace graphshard::engine {
namespace {

using internal::NodeIndex;

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

// The time of each seed's tree (temporal sampling only, else empty): the request's seed times,
// else the seeds' node times.
std::vector<int64_t> SeedTimes(const LocalPart& local, const MinibatchRequest& request,
                               int seed_type, bool temporal) {
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
  return seed_times;
}

// One empty relabelling per node type: the part's pooled tables, keyed by id (node_index.h),
// or (tree, id) hash maps in disjoint mode. `max_nodes`: the batch's bound on its nodes (every
// type together), what a hash table is sized for.
std::vector<NodeIndex> EmptyNodeIndexes(const LocalPart& local, bool disjoint, int64_t max_nodes) {
  std::vector<NodeIndex> types;
  types.reserve(local.node_types().size());
  for (const NodeType& t : local.node_types()) {
    types.push_back(disjoint
                        ? NodeIndex::ByTree()
                        : NodeIndex::ById(local.relabel_tables(), t.book->num_nodes(), max_nodes));
  }
  return types;
}

// A link batch's supervision edges as the batch carries them: every endpoint is a seed (hop 0
// of its type, added to `types`), each once (per tree), in order of first appearance. When
// temporal, `seed_times` becomes the time of each tree.
LinkLabels AddLinkEndpoints(const LocalPart& local, const internal::LinkSeeds& link,
                            bool disjoint, bool temporal, std::vector<NodeIndex>& types,
                            std::vector<int64_t>& seed_times) {
  LinkLabels labels;
  const internal::LinkPlan& plan = *link.plan;
  const auto m = link.src.size();
  labels.edge_type = local.edge_types()[static_cast<size_t>(plan.edge_type)].name;
  labels.num_pos = link.num_pos;
  labels.src.resize(m);
  labels.dst.resize(m);
  labels.label.assign(m, 0.0f);
  std::fill(labels.label.begin(), labels.label.begin() + link.num_pos, 1.0f);
  // Disjoint (temporal) link batches, as PyG's LinkNeighborLoader: every endpoint is sampled
  // in a tree of its own at its edge's time: the source of positive i is tree i (its negatives
  // share it: same node, same time, the same sample), the destination of supervision edge k
  // tree num_pos + k (a negative at its positive's time).
  const auto num_pos = static_cast<size_t>(link.num_pos);
  for (size_t i = 0; i < m; ++i) {
    const auto src_tree = disjoint ? static_cast<int64_t>(i % num_pos) : 0;
    const auto dst_tree = disjoint ? static_cast<int64_t>(num_pos + i) : 0;
    labels.src[i] = types[static_cast<size_t>(plan.src_type)].Add(src_tree, link.src[i]);
    labels.dst[i] = types[static_cast<size_t>(plan.dst_type)].Add(dst_tree, link.dst[i]);
  }
  if (temporal) {
    seed_times.assign(num_pos + m, 0);
    for (size_t i = 0; i < num_pos; ++i) seed_times[i] = link.time[i];
    for (size_t k = 0; k < m; ++k) seed_times[num_pos + k] = link.time[k];
  }
  return labels;
}

// Adds the request's seeds to their type (hop 0), seed i in tree i when disjoint.
// InvalidArgument for a seed given twice (in one tree).
absl::Status AddSeeds(const MinibatchRequest& request, int seed_type, bool disjoint,
                      std::vector<NodeIndex>& types) {
  for (size_t i = 0; i < request.seeds.size(); ++i) {
    int64_t before = std::ssize(types[seed_type].ids);
    types[seed_type].Add(disjoint ? static_cast<int64_t>(i) : 0, request.seeds[i]);
    if (std::ssize(types[seed_type].ids) == before) {
      return absl::InvalidArgumentError(
          absl::StrCat("seed ", request.seeds[i], " appears twice in the batch"));
    }
  }
  return absl::OkStatus();
}

// The sampled subgraph: the seeds (and link endpoints) already in `types`, then `hops` hops.
struct SampledGraph {
  // Per node type: the nodes added at hop 0, 1, ... (NodeBlock::num_sampled_nodes).
  std::vector<std::vector<int64_t>> sampled_nodes;
  std::vector<EdgeBlock> edges;  // per edge type
};

absl::StatusOr<SampledGraph> SampleHops(const LocalPart& local, Peers& peers,
                                        const MinibatchRequest& request, int hops,
                                        const std::vector<int64_t>& seed_times,
                                        const internal::LinkSeeds* link,
                                        std::vector<NodeIndex>& types, BuildProfile& profile) {
  SampledGraph out;
  out.sampled_nodes.resize(types.size());
  for (size_t t = 0; t < types.size(); ++t) {
    out.sampled_nodes[t].push_back(std::ssize(types[t].ids));
  }
  out.edges.resize(local.edge_types().size());
  for (int hop = 0; hop < hops; ++hop) {
    RETURN_IF_ERROR(internal::CheckCancelled(request));
    std::vector<int64_t> before(types.size());
    for (size_t t = 0; t < types.size(); ++t) before[t] = std::ssize(types[t].ids);
    RETURN_IF_ERROR(internal::RunHop(local, peers, request, seed_times, hop, types, out.edges,
                                     link, profile));
    for (size_t t = 0; t < types.size(); ++t) {
      out.sampled_nodes[t].push_back(std::ssize(types[t].ids) - before[t]);
    }
  }
  return out;
}

// The batch of the sampled graph, without rows or labels yet: one block per node type (moved
// out of `types`) and per edge type.
Minibatch AssembleBatch(const LocalPart& local, const MinibatchRequest& request, int seed_type,
                        bool disjoint, int64_t batch_size, LinkLabels labels,
                        std::vector<NodeIndex>& types, SampledGraph& graph) {
  Minibatch out;
  out.batch_size = batch_size;
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
    block.num_sampled_nodes = std::move(graph.sampled_nodes[t]);
    out.nodes.push_back(std::move(block));
  }
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    graph.edges[e].edge_type = local.edge_types()[e].name;
    out.edges.push_back(std::move(graph.edges[e]));
  }
  return out;
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
  std::vector<int64_t> seed_times = SeedTimes(local, request, seed_type, temporal);
  // Link batches: the seeds are the endpoints (at most two per supervision edge).
  const int64_t num_seeds =
      link != nullptr ? 2 * std::ssize(link->src) : std::ssize(request.seeds);
  // A hint only (a hash table grows past it): 0 when the bound is not a positive number.
  const double bound = MinibatchCost(local, seed_type, num_seeds, request.sampling, hops).nodes;
  const int64_t max_nodes =
      bound > 0 ? static_cast<int64_t>(std::min(bound, double{int64_t{1} << 40})) : 0;
  std::vector<NodeIndex> types = EmptyNodeIndexes(local, disjoint, max_nodes);
  LinkLabels labels;
  if (link != nullptr) {
    labels = AddLinkEndpoints(local, *link, disjoint, temporal, types, seed_times);
  }
  RETURN_IF_ERROR(AddSeeds(request, seed_type, disjoint, types));
  ASSIGN_OR_RETURN(SampledGraph graph,
                   SampleHops(local, peers, request, hops, seed_times, link, types, profile));
  clock.Lap(&profile.sample);
  const int64_t batch_size = link != nullptr ? std::ssize(labels.src) : std::ssize(request.seeds);
  Minibatch out = AssembleBatch(local, request, seed_type, disjoint, batch_size,
                                std::move(labels), types, graph);
  RETURN_IF_ERROR(CheckCancelled(request));
  RETURN_IF_ERROR(GatherAll(local, peers, request, out, profile));
  clock.Lap(&profile.gather);
  out.profile = profile;
  return out;
}

}  // namespace internal
}  // namespace graphshard::engine
