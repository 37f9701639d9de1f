// AssignGraphParts: random, METIS and streaming assignment of nodes to parts.

#include <algorithm>
#include <numeric>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "partitioner/internal/metis_partition.h"
#include "partitioner/internal/stream_partition.h"
#include "partitioner/partition.h"
#include "partitioner/tu_dataset.h"

namespace graphshard::partitioner {
namespace {

constexpr int kMaxParts = 1 << 16;
constexpr uint64_t kPartStream = 0x70617274;  // "part"

absl::Status CheckOptions(const Graph& g, const PartitionOptions& o) {
  if (o.method != "random" && o.method != "metis" && o.method != "stream") {
    return absl::InvalidArgumentError(absl::StrCat("unknown partition method \"", o.method,
                                                   "\" (this build has: random, metis, stream)"));
  }
  if (o.method == "stream" && o.stream_passes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("stream passes ", o.stream_passes, " must be at least 1"));
  }
  if (o.num_parts < 1 || o.num_parts > kMaxParts) {
    return absl::InvalidArgumentError(
        absl::StrCat("number of parts ", o.num_parts, " is outside [1, ", kMaxParts, "]"));
  }
  if (IsGraphDataset(g)) {
    if (o.method != "random" && o.num_parts > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--method ", o.method, ": a graph-classification (TU) dataset is sharded by whole "
          "graphs at random; use --method random"));
    }
    const int64_t graphs = g.node_types[g.NodeTypeIndex(kGraphNodeType)].num_nodes;
    if (o.num_parts > graphs) {
      return absl::InvalidArgumentError(absl::StrCat("number of parts ", o.num_parts,
                                                     " exceeds the number of graphs ", graphs));
    }
    return absl::OkStatus();
  }
  const int64_t n = g.TotalNodes();
  if (n > 0 && o.num_parts > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("number of parts ", o.num_parts, " exceeds the number of nodes ", n));
  }
  return absl::OkStatus();
}

// A seeded Fisher-Yates shuffle of one type's nodes cut into near-equal pieces. Type 0 uses the
// stream the homogeneous partitioner always used, so homogeneous outputs did not change.
std::vector<int> RandomParts(int64_t n, int num_parts, uint64_t seed, size_t type_index) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  common::SplitMix64 rng(common::MixSeed(seed, kPartStream + type_index));
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(perm[i], perm[rng.Below(static_cast<uint64_t>(i) + 1)]);
  }
  // The first `rem` parts get base + 1 nodes, the others base.
  const int64_t base = n / num_parts, rem = n % num_parts;
  const int64_t big = rem * (base + 1);
  std::vector<int> parts(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    parts[perm[i]] = static_cast<int>(i < big ? i / (base + 1) : rem + (i - big) / base);
  }
  return parts;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int>>> AssignGraphParts(const Graph& g,
                                                               const PartitionOptions& o) {
  RETURN_IF_ERROR(CheckOptions(g, o));
  std::vector<std::vector<int>> parts;
  if (o.num_parts == 1) {
    for (const NodeTypeData& t : g.node_types) parts.emplace_back(t.num_nodes, 0);
    return parts;
  }
  if (IsGraphDataset(g)) {
    // Whole graphs: a seeded near-equal cut of the graphs; every node goes with its graph.
    const int graph_type = g.NodeTypeIndex(kGraphNodeType);
    std::vector<int> graph_part =
        RandomParts(g.node_types[graph_type].num_nodes, o.num_parts, o.seed, graph_type);
    ASSIGN_OR_RETURN(std::vector<int64_t> graph_of, GraphOfNode(g));
    for (const NodeTypeData& t : g.node_types) {
      if (t.name == kGraphNodeType) {
        parts.push_back(graph_part);
      } else if (t.name == kHomogeneousNodeType) {
        std::vector<int>& p = parts.emplace_back(graph_of.size());
        for (size_t v = 0; v < graph_of.size(); ++v) p[v] = graph_part[graph_of[v]];
      } else {
        parts.push_back(RandomParts(t.num_nodes, o.num_parts, o.seed, parts.size()));
      }
    }
    return parts;
  }
  if (o.method == "random" || o.method == "stream") {
    for (size_t i = 0; i < g.node_types.size(); ++i) {
      parts.push_back(RandomParts(g.node_types[i].num_nodes, o.num_parts, o.seed, i));
    }
    if (o.method == "random") return parts;
    internal::StreamOptions so;
    so.num_parts = o.num_parts;
    so.passes = o.stream_passes;
    so.seed = o.seed;
    so.threads = o.threads > 0 ? o.threads
                               : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    so.progress = {o.log, o.log_is_terminal, o.progress_every_s};
    RETURN_IF_ERROR(internal::StreamPartition(g, so, parts));
    return parts;
  }
  internal::MetisOptions mo;
  mo.num_parts = o.num_parts;
  mo.seed = o.seed;
  mo.progress = {o.log, o.log_is_terminal, o.progress_every_s};
  ASSIGN_OR_RETURN(std::vector<int> flat, internal::MetisPartition(g, mo));
  int64_t offset = 0;
  for (const NodeTypeData& t : g.node_types) {
    parts.emplace_back(flat.begin() + offset, flat.begin() + offset + t.num_nodes);
    offset += t.num_nodes;
  }
  return parts;
}

}  // namespace graphshard::partitioner
