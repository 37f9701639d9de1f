#include "server/engine/request_cost.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/engine/minibatch_builder.h"

namespace graphshard::engine {
namespace {

// Bytes a sampled node and a sampled edge take while a batch is built and held: the node's id
// and label (and tree, and its entry in the relabelling hash map, in disjoint mode), the edge's
// src and dst indices and its neighbour id in the hop's answer. Feature rows come on top.
constexpr double kNodeBytes = 16;
constexpr double kDisjointNodeBytes = 16 + 40;
constexpr double kEdgeBytes = 24;

// The most in-edges a node of edge type `e` has: the manifest's max_in_degree, else (older
// folders) the type's edge count, a bound as safe and much looser.
double MaxInDegree(const LocalPart& local, size_t e) {
  const common::EdgeTypeInfo& info = local.part().manifest().edge_types[e];
  return static_cast<double>(info.max_in_degree >= 0 ? info.max_in_degree : info.num_edges);
}

// Edges one node can yield at `fanout`.
double PerNode(double max_degree, int32_t fanout, bool replace) {
  if (fanout < 0) return max_degree;
  return replace ? fanout : std::min<double>(fanout, max_degree);
}

double RowBytes(const LocalPart& local, int t, FeatureDtype dtype) {
  return static_cast<double>(local.node_types()[t].shard->feat_dim) * common::FeatureBytes(dtype);
}

std::string Count(double v) {
  return v < 1e15 ? absl::StrCat(static_cast<int64_t>(v)) : absl::StrCat(v);
}

}  // namespace

RequestCost MinibatchCost(const LocalPart& local, int seed_type, int64_t num_seeds,
                          const SamplingConfig& sampling, int hops) {
  const auto& types = local.node_types();
  const auto& etypes = local.edge_types();
  const size_t nt = types.size();
  // Temporal sampling is disjoint (a tree per seed), whatever the flag says.
  const bool disjoint = sampling.disjoint || sampling.temporal != TemporalMode::kOff;
  const double trees = disjoint ? static_cast<double>(num_seeds) : 1.0;
  std::vector<double> frontier(nt, 0), total(nt, 0), cap(nt, 0);
  for (size_t t = 0; t < nt; ++t) cap[t] = trees * static_cast<double>(types[t].book->num_nodes());
  std::vector<double> edges_left(etypes.size());
  for (size_t e = 0; e < etypes.size(); ++e) {
    edges_left[e] = trees * static_cast<double>(local.part().manifest().edge_types[e].num_edges);
  }
  frontier[seed_type] = total[seed_type] = static_cast<double>(num_seeds);
  RequestCost cost;
  for (int hop = 0; hop < hops; ++hop) {
    std::vector<double> fresh(nt, 0);
    for (size_t e = 0; e < etypes.size(); ++e) {
      const int32_t fanout = FanoutOf(sampling, etypes[e].name, hop);
      if (fanout == 0) continue;
      double edges =
          frontier[etypes[e].dst] * PerNode(MaxInDegree(local, e), fanout, sampling.replace);
      // Without replacement (and fanout -1 always takes each edge once) no edge comes twice.
      if (!sampling.replace || fanout < 0) {
        edges = std::min(edges, edges_left[e]);
        edges_left[e] -= edges;
      }
      cost.edges += edges;
      fresh[etypes[e].src] += edges;
    }
    for (size_t t = 0; t < nt; ++t) {
      // Seeds may outnumber their type's nodes (link batches repeat endpoints; a batch size
      // above the type's count): no room left is 0 new nodes, never a negative frontier that
      // would take back counted nodes and edges and let a costly request pass.
      frontier[t] = std::min(fresh[t], std::max(0.0, cap[t] - total[t]));
      total[t] += frontier[t];
    }
  }
  const double node_bytes = disjoint ? kDisjointNodeBytes : kNodeBytes;
  // On the wire: id and label per node (and its tree when disjoint), src and dst per edge.
  const double wire_node_bytes = disjoint ? 24 : 16;
  for (size_t t = 0; t < nt; ++t) {
    cost.nodes += total[t];
    const double row_bytes =
        sampling.without_features ? 0 : RowBytes(local, static_cast<int>(t), sampling.feature_dtype);
    cost.bytes += total[t] * (node_bytes + row_bytes);
    cost.answer_bytes += total[t] * (wire_node_bytes + row_bytes);
  }
  cost.bytes += cost.edges * kEdgeBytes;
  cost.answer_bytes += cost.edges * 16;
  return cost;
}

absl::StatusOr<RequestCost> BatchCost(const LocalPart& local, const std::string& seed_type,
                                      int64_t num_seeds, const SamplingConfig& sampling) {
  const int t = seed_type.empty() ? local.target_type() : local.NodeTypeIndex(seed_type);
  if (t < 0) return absl::InvalidArgumentError(absl::StrCat("unknown node type '", seed_type, "'"));
  absl::StatusOr<int> hops = ValidateSampling(local, sampling);
  if (!hops.ok()) return hops.status();
  return MinibatchCost(local, t, num_seeds, sampling, *hops);
}

RequestCost GatherCost(const LocalPart& local, absl::Span<const TypedIds> items,
                       FeatureDtype dtype) {
  RequestCost cost;
  for (const TypedIds& item : items) {
    const int t = local.NodeTypeIndex(item.node_type);
    if (t < 0) continue;
    const double n = static_cast<double>(item.ids.size());
    cost.nodes += n;
    cost.bytes += n * (8.0 + RowBytes(local, t, dtype));
    cost.answer_bytes += n * (8.0 + RowBytes(local, t, dtype));
  }
  return cost;
}

absl::Status CheckAnswer(const RequestCost& cost, int64_t max_answer_bytes,
                         absl::string_view what) {
  if (max_answer_bytes <= 0 || cost.answer_bytes <= static_cast<double>(max_answer_bytes)) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "the answer to ", what, " may take up to ", Count(cost.answer_bytes / (1 << 20)),
      " MiB, above the ", max_answer_bytes >> 20,
      " MiB one message may carry: refused before any work (ask for fewer seeds, smaller "
      "fanouts or 16-bit features)"));
}

absl::Status CheckCost(const RequestCost& cost, const Limits& limits, absl::string_view what) {
  auto refuse = [&](absl::string_view quantity, double bound, int64_t budget,
                    absl::string_view flag) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " may take up to ", Count(bound), " ", quantity, ", above the budget of ", budget,
        " per request (raise it with graphshard-server ", flag, ", or ask for less)"));
  };
  if (cost.nodes > static_cast<double>(limits.max_request_nodes)) {
    return refuse("sampled nodes", cost.nodes, limits.max_request_nodes, "--max-request-nodes");
  }
  if (cost.edges > static_cast<double>(limits.max_request_edges)) {
    return refuse("sampled edges", cost.edges, limits.max_request_edges, "--max-request-edges");
  }
  if (cost.bytes > static_cast<double>(limits.max_request_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " may take up to ", Count(cost.bytes / (1 << 20)), " MiB, above the budget of ",
        limits.max_request_bytes >> 20,
        " MiB per request (raise it with graphshard-server --max-request-mib, or ask for less)"));
  }
  return absl::OkStatus();
}

}  // namespace graphshard::engine
