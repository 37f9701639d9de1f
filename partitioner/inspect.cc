#include "partitioner/inspect.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/partition_part.h"
#include "common/status_macros.h"

namespace graphshard::partitioner {
namespace {

double Balance(const std::vector<PartStats>& parts, int64_t PartStats::*field) {
  int64_t total = 0, max = 0;
  for (const PartStats& p : parts) {
    total += p.*field;
    max = std::max(max, p.*field);
  }
  if (total == 0) return 1.0;
  return static_cast<double>(max) * static_cast<double>(parts.size()) /
         static_cast<double>(total);
}

}  // namespace

absl::StatusOr<PartitionStats> InspectPartition(const std::string& dir, bool verify_checksums) {
  PartitionStats stats;
  ASSIGN_OR_RETURN(stats.manifest, common::ReadManifest(dir));
  common::LoadOptions load;
  load.verify_checksums = verify_checksums;
  for (int k = 0; k < stats.manifest.num_parts; ++k) {
    ASSIGN_OR_RETURN(auto part, common::PartitionPart::Load(dir, k, load));
    PartStats ps;
    ps.part = k;
    for (const common::NodeTypeInfo& t : stats.manifest.node_types) {
      const common::NodeShard* nodes = part->FindNodes(t.name);
      ps.nodes += nodes->num_rows();
      auto train = nodes->splits.find("train");
      if (train != nodes->splits.end()) ps.train_nodes += std::ssize(train->second);
    }
    for (const common::EdgeTypeInfo& t : stats.manifest.edge_types) {
      const common::EdgeShard* edges = part->FindEdges(t.Name());
      const common::PartitionBook* book = part->FindBook(t.src);
      const int64_t lo = book->begin(k), hi = book->end(k);
      ps.edges += edges->csc.num_edges();
      for (int64_t v = 0; v < edges->csc.num_dst_nodes(); ++v) {
        for (int64_t s : edges->csc.InNeighbors(v)) ps.edge_cut += (s < lo || s >= hi) ? 1 : 0;
      }
    }
    stats.total_nodes += ps.nodes;
    stats.total_edges += ps.edges;
    stats.total_edge_cut += ps.edge_cut;
    stats.parts.push_back(ps);
  }
  stats.node_balance = Balance(stats.parts, &PartStats::nodes);
  stats.edge_balance = Balance(stats.parts, &PartStats::edges);
  return stats;
}

std::string FormatStatsText(const PartitionStats& s) {
  const common::Manifest& m = s.manifest;
  std::string out = absl::StrFormat("parts: %d  method: %s  seed: %d  format_version: %d\n",
                                    m.num_parts, m.method, m.seed, m.format_version);
  for (const common::NodeTypeInfo& t : m.node_types) {
    absl::StrAppendFormat(&out, "node type %s: %d nodes, %d features, %d classes\n", t.name,
                          t.num_nodes, t.feat_dim, t.num_classes);
  }
  for (const common::EdgeTypeInfo& t : m.edge_types) {
    absl::StrAppendFormat(&out, "edge type %s: %d edges\n", t.Name(), t.num_edges);
  }
  for (const auto& [split, per_type] : m.splits) {
    for (const auto& [ntype, sizes] : per_type) {
      int64_t total = 0;
      for (int64_t x : sizes) total += x;
      absl::StrAppendFormat(&out, "split %s/%s: %d nodes\n", split, ntype, total);
    }
  }
  absl::StrAppendFormat(&out, "%6s %12s %12s %12s %8s %12s\n", "part", "nodes", "edges",
                        "edge_cut", "cut%", "train");
  for (const PartStats& p : s.parts) {
    double pct = p.edges == 0 ? 0.0 : 100.0 * static_cast<double>(p.edge_cut) /
                                          static_cast<double>(p.edges);
    absl::StrAppendFormat(&out, "%6d %12d %12d %12d %7.2f%% %12d\n", p.part, p.nodes, p.edges,
                          p.edge_cut, pct, p.train_nodes);
  }
  absl::StrAppendFormat(&out, "total: %d nodes, %d edges, edge cut %d; balance nodes %.3f, "
                        "edges %.3f\n", s.total_nodes, s.total_edges, s.total_edge_cut,
                        s.node_balance, s.edge_balance);
  return out;
}

std::string FormatStatsJson(const PartitionStats& s) {
  nlohmann::json j;
  j["num_parts"] = s.manifest.num_parts;
  j["method"] = s.manifest.method;
  j["seed"] = s.manifest.seed;
  j["num_nodes"] = s.total_nodes;
  j["num_edges"] = s.total_edges;
  j["edge_cut"] = s.total_edge_cut;
  j["node_balance"] = s.node_balance;
  j["edge_balance"] = s.edge_balance;
  j["node_types"] = nlohmann::json::array();
  for (const common::NodeTypeInfo& t : s.manifest.node_types) {
    j["node_types"].push_back({{"name", t.name}, {"num_nodes", t.num_nodes},
                               {"feat_dim", t.feat_dim}, {"num_classes", t.num_classes}});
  }
  j["edge_types"] = nlohmann::json::array();
  for (const common::EdgeTypeInfo& t : s.manifest.edge_types) {
    j["edge_types"].push_back({{"name", t.Name()}, {"num_edges", t.num_edges}});
  }
  j["splits"] = s.manifest.splits;
  j["parts"] = nlohmann::json::array();
  for (const PartStats& p : s.parts) {
    j["parts"].push_back({{"part", p.part}, {"nodes", p.nodes}, {"edges", p.edges},
                          {"edge_cut", p.edge_cut}, {"train_nodes", p.train_nodes}});
  }
  return j.dump() + "\n";
}

}  // namespace graphshard::partitioner
