// Reading and writing OGB's raw homogeneous layout (see input_graph.h).

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "partitioner/input_graph.h"
#include "partitioner/internal/atomic_dir.h"
#include "partitioner/internal/gz_csv.h"
#include "partitioner/internal/ogb_read.h"

namespace graphshard::partitioner {
namespace {
namespace fs = std::filesystem;
}  // namespace

absl::StatusOr<InputGraph> ReadOgbHomogeneous(const std::string& dir,
                                              const OgbReadOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": no such input folder"));
  }
  const std::string raw = absl::StrCat(dir, "/raw/");
  InputGraph g;
  ASSIGN_OR_RETURN(g.num_nodes, internal::ReadCount(raw + "num-node-list.csv.gz"));
  ASSIGN_OR_RETURN(int64_t num_edges, internal::ReadCount(raw + "num-edge-list.csv.gz"));
  RETURN_IF_ERROR(internal::ReadEdgeFile(raw + "edge.csv.gz", g.num_nodes, g.num_nodes, num_edges,
                                         g.src, g.dst));
  RETURN_IF_ERROR(
      internal::ReadFeatureFile(raw + "node-feat.csv.gz", g.num_nodes, g.feat_dim, g.features));
  RETURN_IF_ERROR(
      internal::ReadLabelFile(raw + "node-label.csv.gz", g.num_nodes, g.labels, g.num_classes));
  ASSIGN_OR_RETURN(std::string split_dir, internal::FindSplitDir(dir, options.split_name));
  RETURN_IF_ERROR(internal::ReadSplitFolder(split_dir, g.num_nodes, g.splits));
  if (options.undirected) MakeUndirected(g);
  return g;
}

absl::Status WriteOgbHomogeneous(const InputGraph& g, const std::string& dir,
                                 const std::string& split_name) {
  RETURN_IF_ERROR(ValidateInputGraph(g));
  if (split_name.empty() || split_name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("bad split name \"", split_name, "\""));
  }
  ASSIGN_OR_RETURN(internal::AtomicDir out, internal::AtomicDir::Create(dir, /*replace=*/false));
  RETURN_IF_ERROR(out.MakeDirs("raw"));
  RETURN_IF_ERROR(out.MakeDirs(absl::StrCat("split/", split_name)));
  const std::string raw = absl::StrCat(out.tmp_path(), "/raw/");
  RETURN_IF_ERROR(
      internal::WriteGzLines(raw + "num-node-list.csv.gz", 1,
                             [&](int64_t, std::string* s) { absl::StrAppend(s, g.num_nodes); }));
  RETURN_IF_ERROR(
      internal::WriteGzLines(raw + "num-edge-list.csv.gz", 1,
                             [&](int64_t, std::string* s) { absl::StrAppend(s, g.num_edges()); }));
  RETURN_IF_ERROR(internal::WriteGzLines(
      raw + "edge.csv.gz", g.num_edges(),
      [&](int64_t e, std::string* s) { absl::StrAppend(s, g.src[e], ",", g.dst[e]); }));
  RETURN_IF_ERROR(
      internal::WriteGzLines(raw + "node-feat.csv.gz", g.num_nodes, [&](int64_t v, std::string* s) {
        for (int64_t k = 0; k < g.feat_dim; ++k) {
          if (k > 0) s->push_back(',');
          internal::AppendFloat(g.features[v * g.feat_dim + k], s);
        }
      }));
  RETURN_IF_ERROR(
      internal::WriteGzLines(raw + "node-label.csv.gz", g.num_nodes,
                             [&](int64_t v, std::string* s) { absl::StrAppend(s, g.labels[v]); }));
  const std::pair<const char*, const char*> kFiles[] = {
      {"train", "train"}, {"valid", "val"}, {"test", "test"}};
  for (const auto& [file, name] : kFiles) {
    auto it = g.splits.find(name);
    static const std::vector<int64_t> kEmpty;
    const std::vector<int64_t>& ids = it == g.splits.end() ? kEmpty : it->second;
    RETURN_IF_ERROR(internal::WriteGzLines(
        absl::StrCat(out.tmp_path(), "/split/", split_name, "/", file, ".csv.gz"), std::ssize(ids),
        [&](int64_t i, std::string* s) { absl::StrAppend(s, ids[i]); }));
  }
  return out.Commit();
}

}  // namespace graphshard::partitioner
