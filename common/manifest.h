#ifndef GRAPHSHARD_COMMON_MANIFEST_H_
#define GRAPHSHARD_COMMON_MANIFEST_H_

// The manifest of a partition folder (`<dir>/graphshard.json`): what the folder holds, the id
// ranges of every part, and the dtype, shape and CRC-32 of every array file. See docs/DESIGN.md.

#include <cstdint>
#include <map>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "common/npy.h"

namespace graphshard::common {

inline constexpr int kManifestFormatVersion = 1;
inline constexpr char kManifestFileName[] = "graphshard.json";

struct NodeTypeInfo {
  std::string name;
  int64_t num_nodes = 0;
  std::vector<int64_t> part_offsets;  // [num_parts + 1]; part p owns [p, p+1) of this type
  int64_t feat_dim = 0;
  int64_t num_classes = 0;  // 0 = no labels for this type
  // The dtypes the manifest states for feat.npy and label.npy; checked against the arrays'
  // .npy headers at load (graphshard reads float32 features and int64 labels).
  std::string feat_dtype = "float32";
  std::string label_dtype = "int64";
};

struct EdgeTypeInfo {
  std::string src;
  std::string rel;
  std::string dst;
  int64_t num_edges = 0;
  std::vector<int64_t> part_num_edges;  // [num_parts]: edges stored with each part (by dst)
  // The largest in-degree of any dst node over all parts (-1: not recorded, folders written
  // before it was); bounds what a fanout of -1 can sample (server/engine/request_cost.h).
  int64_t max_in_degree = -1;
  std::string Name() const { return src + "__" + rel + "__" + dst; }
};

struct FileInfo {
  DType dtype = DType::kInt64;
  std::vector<int64_t> shape;
  std::string checksum;  // "crc32:%08x" of the whole file
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  int num_parts = 0;
  std::string method;  // "random", "metis"
  uint64_t seed = 0;
  std::vector<NodeTypeInfo> node_types;
  std::vector<EdgeTypeInfo> edge_types;
  // split name ("train", "val", "test") -> node type -> [num_parts] sizes.
  std::map<std::string, std::map<std::string, std::vector<int64_t>>> splits;
  // Link prediction: edge type -> split name -> [num_parts] supervision edges stored with each
  // part (by destination). Absent from older manifests (= none).
  std::map<std::string, std::map<std::string, std::vector<int64_t>>> edge_splits;
  // Edge type with edge splits -> the edge type holding its edges reversed (absent = none).
  std::map<std::string, std::string> edge_split_reverse;
  // Relative path ("part_0/nodes/node/feat.npy") -> what the file must be.
  std::map<std::string, FileInfo> files;

  const NodeTypeInfo* FindNodeType(absl::string_view name) const;
};

std::string ManifestToJson(const Manifest& manifest);
// InvalidArgument naming `path` and the field for malformed JSON, missing or ill-typed fields,
// or inconsistent values (offsets not ascending, wrong number of parts, ...).
absl::StatusOr<Manifest> ParseManifest(absl::string_view json, const std::string& path);
absl::StatusOr<Manifest> ReadManifest(const std::string& dir);
// Writes `<dir>/graphshard.json` (atomically).
absl::Status WriteManifest(const std::string& dir, const Manifest& manifest);

// Relative paths inside a partition folder.
std::string PartDir(int part);
std::string NodeFilePath(int part, absl::string_view ntype, absl::string_view file);
std::string EdgeFilePath(int part, absl::string_view etype, absl::string_view file);
std::string SplitFilePath(int part, absl::string_view ntype, absl::string_view split);
// part_<k>/edge_splits/<etype>/<split>.npy: int64 [2, n], row 0 sources, row 1 destinations
// (global ids; every destination owned by part k). file "dst_degree" (no split): int64
// [num dst nodes], every destination's number of training edges (degree-biased negatives).
// file "<split>_time" (edge types with times): int64 [n], each supervision edge's time.
std::string EdgeSplitFilePath(int part, absl::string_view etype, absl::string_view file);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_MANIFEST_H_
