#include "partitioner/inspect.h"

#include <algorithm>
#include <filesystem>
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
  return static_cast<double>(max) * static_cast<double>(parts.size()) / static_cast<double>(total);
}

int64_t BytesUnder(const std::string& path) {
  std::error_code ec;
  int64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

double Fraction(int64_t a, int64_t b) {
  return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b);
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
      ps.nodes_by_type[t.name] = nodes->num_rows();
      auto train = nodes->splits.find("train");
      if (train != nodes->splits.end()) ps.train_nodes += std::ssize(train->second);
    }
    for (const common::EdgeTypeInfo& t : stats.manifest.edge_types) {
      const common::EdgeShard* edges = part->FindEdges(t.Name());
      const common::PartitionBook* book = part->FindBook(t.src);
      const int64_t lo = book->begin(k), hi = book->end(k);
      int64_t cut = 0;
      for (int64_t v = 0; v < edges->csc.num_dst_nodes(); ++v) {
        for (int64_t s : edges->csc.InNeighbors(v)) cut += (s < lo || s >= hi) ? 1 : 0;
      }
      ps.edges += edges->csc.num_edges();
      ps.edge_cut += cut;
      ps.edges_by_type[t.Name()] = edges->csc.num_edges();
      ps.edge_cut_by_type[t.Name()] = cut;
    }
    ps.bytes = BytesUnder(absl::StrCat(dir, "/", common::PartDir(k)));
    stats.total_nodes += ps.nodes;
    stats.total_edges += ps.edges;
    stats.total_edge_cut += ps.edge_cut;
    stats.parts.push_back(ps);
  }
  stats.node_balance = Balance(stats.parts, &PartStats::nodes);
  stats.edge_balance = Balance(stats.parts, &PartStats::edges);
  stats.train_balance = Balance(stats.parts, &PartStats::train_nodes);
  stats.remote_fraction = Fraction(stats.total_edge_cut, stats.total_edges);
  stats.total_bytes = BytesUnder(dir);
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
  absl::StrAppendFormat(&out, "%6s %12s %12s %12s %8s %12s %14s\n", "part", "nodes", "edges",
                        "edge_cut", "remote%", "train", "bytes");
  for (const PartStats& p : s.parts) {
    absl::StrAppendFormat(&out, "%6d %12d %12d %12d %7.2f%% %12d %14d\n", p.part, p.nodes, p.edges,
                          p.edge_cut, 100 * Fraction(p.edge_cut, p.edges), p.train_nodes, p.bytes);
    if (m.node_types.size() > 1 || m.edge_types.size() > 1) {
      for (const auto& [name, n] : p.nodes_by_type) {
        absl::StrAppendFormat(&out, "         node %s: %d\n", name, n);
      }
      for (const auto& [name, n] : p.edges_by_type) {
        absl::StrAppendFormat(&out, "         edge %s: %d (remote %d)\n", name, n,
                              p.edge_cut_by_type.at(name));
      }
    }
  }
  absl::StrAppendFormat(&out,
                        "total: %d nodes, %d edges, edge cut %d (%.2f%% of in-neighbours "
                        "remote); balance (max/mean) nodes %.3f, edges %.3f, train %.3f; "
                        "%d bytes\n",
                        s.total_nodes, s.total_edges, s.total_edge_cut, 100 * s.remote_fraction,
                        s.node_balance, s.edge_balance, s.train_balance, s.total_bytes);
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
  j["train_balance"] = s.train_balance;
  j["remote_fraction"] = s.remote_fraction;
  j["bytes"] = s.total_bytes;
  j["node_types"] = nlohmann::json::array();
  for (const common::NodeTypeInfo& t : s.manifest.node_types) {
    j["node_types"].push_back({{"name", t.name},
                               {"num_nodes", t.num_nodes},
                               {"feat_dim", t.feat_dim},
                               {"num_classes", t.num_classes}});
  }
  j["edge_types"] = nlohmann::json::array();
  for (const common::EdgeTypeInfo& t : s.manifest.edge_types) {
    j["edge_types"].push_back({{"name", t.Name()}, {"num_edges", t.num_edges}});
  }
  j["splits"] = s.manifest.splits;
  j["parts"] = nlohmann::json::array();
  for (const PartStats& p : s.parts) {
    j["parts"].push_back({{"part", p.part},
                          {"nodes", p.nodes},
                          {"edges", p.edges},
                          {"edge_cut", p.edge_cut},
                          {"train_nodes", p.train_nodes},
                          {"bytes", p.bytes},
                          {"nodes_by_type", p.nodes_by_type},
                          {"edges_by_type", p.edges_by_type},
                          {"edge_cut_by_type", p.edge_cut_by_type}});
  }
  return j.dump() + "\n";
}

}  // namespace graphshard::partitioner
