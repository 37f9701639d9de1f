#ifndef GRAPHSHARD_PARTITIONER_INSPECT_H_
#define GRAPHSHARD_PARTITIONER_INSPECT_H_

// Statistics of a partition folder (what `graphshard-partition inspect` prints).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/manifest.h"

namespace graphshard::partitioner {

struct PartStats {
  int part = 0;
  int64_t nodes = 0;                             // all node types
  int64_t edges = 0;                             // in-edges stored with this part, all edge types
  int64_t edge_cut = 0;                          // of those, edges whose source another part owns
  int64_t train_nodes = 0;                       // "train" split, all node types
  int64_t bytes = 0;                             // size of part_<k>/ on disk (all files)
  std::map<std::string, int64_t> nodes_by_type;  // node type -> nodes
  std::map<std::string, int64_t> edges_by_type;  // edge type -> stored in-edges
  std::map<std::string, int64_t> edge_cut_by_type;  // edge type -> of those, remote sources
};

struct PartitionStats {
  common::Manifest manifest;
  std::vector<PartStats> parts;
  int64_t total_nodes = 0;
  int64_t total_edges = 0;
  int64_t total_edge_cut = 0;
  double node_balance = 0;     // max part nodes / mean part nodes (1 = perfectly balanced)
  double edge_balance = 0;     // same for edges
  double train_balance = 0;    // same for training nodes (1 if there are none)
  double remote_fraction = 0;  // total_edge_cut / total_edges: remote in-neighbours
  int64_t total_bytes = 0;     // the whole folder on disk
};

// Loads every part with common::PartitionPart::Load (so a damaged folder fails here with that
// error, naming the file) and counts. Reads all files once when verify_checksums.
absl::StatusOr<PartitionStats> InspectPartition(const std::string& dir,
                                                bool verify_checksums = true);

// Human-readable summary (several lines) and a single-line JSON object.
std::string FormatStatsText(const PartitionStats& stats);
std::string FormatStatsJson(const PartitionStats& stats);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_INSPECT_H_
