// Reading and writing OGB's raw homogeneous layout (read_input.h, write_input.h).

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "partitioner/internal/atomic_dir.h"
#include "partitioner/internal/gz_csv.h"
#include "partitioner/internal/ogb_read.h"
#include "partitioner/read_input.h"
#include "partitioner/write_input.h"

namespace graphshard::partitioner {
namespace {
namespace fs = std::filesystem;
}  // namespace

absl::StatusOr<Graph> ReadOgbHomogeneous(const std::string& dir, const OgbReadOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": no such input folder"));
  }
  const std::string raw = absl::StrCat(dir, "/raw/");
  ASSIGN_OR_RETURN(const int64_t num_nodes, internal::ReadCount(raw + "num-node-list.csv.gz"));
  ASSIGN_OR_RETURN(const int64_t num_edges, internal::ReadCount(raw + "num-edge-list.csv.gz"));
  std::vector<int64_t> src, dst;
  RETURN_IF_ERROR(
      internal::ReadEdgeFile(raw + "edge.csv.gz", num_nodes, num_nodes, num_edges, src, dst));
  Graph g = HomogeneousGraph(num_nodes, std::move(src), std::move(dst));
  NodeTypeData& t = g.node_types[0];
  std::vector<float> features;
  RETURN_IF_ERROR(
      internal::ReadFeatureFile(raw + "node-feat.csv.gz", num_nodes, t.feat_dim, features));
  t.features = Array<float>::Owned(std::move(features));
  std::vector<int64_t> labels;
  RETURN_IF_ERROR(
      internal::ReadLabelFile(raw + "node-label.csv.gz", num_nodes, labels, t.num_classes));
  t.labels = Array<int64_t>::Owned(std::move(labels));
  ASSIGN_OR_RETURN(std::string split_dir, internal::FindSplitDir(dir, options.split_name));
  std::map<std::string, std::vector<int64_t>> splits;
  RETURN_IF_ERROR(internal::ReadSplitFolder(split_dir, num_nodes, splits));
  for (auto& [name, ids] : splits) t.splits[name] = Array<int64_t>::Owned(std::move(ids));
  if (options.undirected) {
    EdgeTransformOptions undirected;
    undirected.undirected = true;
    RETURN_IF_ERROR(TransformEdges(g, undirected));
  }
  return g;
}

absl::Status WriteOgbHomogeneous(const Graph& g, const std::string& dir,
                                 const std::string& split_name) {
  RETURN_IF_ERROR(ValidateGraph(g));
  if (!g.IsHomogeneous()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": OGB's homogeneous layout holds one node type and one edge type, not ",
                     g.node_types.size(), " and ", g.edge_types.size()));
  }
  if (split_name.empty() || split_name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("bad split name \"", split_name, "\""));
  }
  const NodeTypeData& t = g.node_types[0];
  const EdgeTypeData e = g.edge_types.empty() ? EdgeTypeData() : g.edge_types[0];
  ASSIGN_OR_RETURN(internal::AtomicDir out, internal::AtomicDir::Create(dir, /*replace=*/false));
  RETURN_IF_ERROR(out.MakeDirs("raw"));
  RETURN_IF_ERROR(out.MakeDirs(absl::StrCat("split/", split_name)));
  const std::string raw = absl::StrCat(out.tmp_path(), "/raw/");
  RETURN_IF_ERROR(
      internal::WriteGzLines(raw + "num-node-list.csv.gz", 1,
                             [&](int64_t, std::string* s) { absl::StrAppend(s, t.num_nodes); }));
  RETURN_IF_ERROR(
      internal::WriteGzLines(raw + "num-edge-list.csv.gz", 1,
                             [&](int64_t, std::string* s) { absl::StrAppend(s, e.num_edges()); }));
  RETURN_IF_ERROR(internal::WriteGzLines(
      raw + "edge.csv.gz", e.num_edges(),
      [&](int64_t i, std::string* s) { absl::StrAppend(s, e.src_ids[i], ",", e.dst_ids[i]); }));
  RETURN_IF_ERROR(
      internal::WriteGzLines(raw + "node-feat.csv.gz", t.num_nodes, [&](int64_t v, std::string* s) {
        for (int64_t k = 0; k < t.feat_dim; ++k) {
          if (k > 0) s->push_back(',');
          internal::AppendFloat(t.features[v * t.feat_dim + k], s);
        }
      }));
  // Without labels every node is unlabelled (-1), which the reader reads back as such.
  RETURN_IF_ERROR(internal::WriteGzLines(
      raw + "node-label.csv.gz", t.num_nodes, [&](int64_t v, std::string* s) {
        absl::StrAppend(s, t.labels.empty() ? int64_t{-1} : t.labels[v]);
      }));
  const std::pair<const char*, const char*> kFiles[] = {
      {"train", "train"}, {"valid", "val"}, {"test", "test"}};
  for (const auto& [file, name] : kFiles) {
    auto it = t.splits.find(name);
    const Array<int64_t> ids = it == t.splits.end() ? Array<int64_t>() : it->second;
    RETURN_IF_ERROR(internal::WriteGzLines(
        absl::StrCat(out.tmp_path(), "/split/", split_name, "/", file, ".csv.gz"), ids.size(),
        [&](int64_t i, std::string* s) { absl::StrAppend(s, ids[i]); }));
  }
  return out.Commit();
}

}  // namespace graphshard::partitioner
