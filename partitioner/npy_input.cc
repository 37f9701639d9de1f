// .npy folders as saved from PyG (see read_input.h): arrays are mmap'ed, never copied.

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/status_macros.h"
#include "partitioner/internal/npy_arrays.h"
#include "partitioner/read_input.h"

namespace graphshard::partitioner {
namespace {

namespace fs = std::filesystem;
using internal::MapNpy;

bool Exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// The pieces of one node type, found by file name.
absl::Status ReadNodeFiles(const std::string& dir, const std::string& suffix, NodeTypeData& t,
                           int64_t known_nodes) {
  int64_t n = known_nodes;
  const std::string x_path = absl::StrCat(dir, "/x", suffix, ".npy");
  if (Exists(x_path)) {
    ASSIGN_OR_RETURN(internal::NpyArray<float> x, MapNpy<float>(x_path, 2));
    if (n >= 0 && x.rows != n) {
      return absl::InvalidArgumentError(
          absl::StrCat(x_path, ": ", x.rows, " rows, expected ", n, " (one per node)"));
    }
    n = x.rows;
    t.feat_dim = x.cols;
    t.features = std::move(x.values);
  }
  const std::string y_path = absl::StrCat(dir, "/y", suffix, ".npy");
  if (Exists(y_path)) {
    ASSIGN_OR_RETURN(internal::NpyArray<int64_t> y, MapNpy<int64_t>(y_path, 1));
    if (y.cols != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(y_path, ": labels must have shape [N] or [N, 1]"));
    }
    if (n >= 0 && y.rows != n) {
      return absl::InvalidArgumentError(
          absl::StrCat(y_path, ": ", y.rows, " labels, expected ", n, " (one per node)"));
    }
    n = y.rows;
    int64_t max_label = -1;
    for (int64_t v : y.values.span()) max_label = std::max(max_label, v);
    y.values.ReleasePages(0, y.values.size());
    t.labels = std::move(y.values);
    t.num_classes = max_label + 1;
  }
  t.num_nodes = n;
  const std::string time_path = absl::StrCat(dir, "/node_time", suffix, ".npy");
  if (Exists(time_path)) {
    ASSIGN_OR_RETURN(internal::NpyArray<int64_t> time, MapNpy<int64_t>(time_path, 1));
    if (time.cols != 1 || (n >= 0 && time.rows != n)) {
      return absl::InvalidArgumentError(absl::StrCat(
          time_path, ": shape must be [num_nodes] (one int64 time per node), has ", time.rows,
          " x ", time.cols, n >= 0 ? absl::StrCat(" for ", n, " nodes") : ""));
    }
    t.time = std::move(time.values);
  }
  const std::pair<const char*, const char*> kSplits[] = {
      {"train_idx", "train"}, {"val_idx", "val"}, {"valid_idx", "val"}, {"test_idx", "test"}};
  for (const auto& [file, name] : kSplits) {
    const std::string path = absl::StrCat(dir, "/", file, suffix, ".npy");
    if (!Exists(path)) continue;
    ASSIGN_OR_RETURN(internal::NpyArray<int64_t> ids, MapNpy<int64_t>(path, 1));
    if (ids.cols != 1)
      return absl::InvalidArgumentError(absl::StrCat(path, ": expected shape [n]"));
    if (t.splits.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": a second file for split ", name));
    }
    if (n >= 0) RETURN_IF_ERROR(internal::CheckIdRange(ids.values, n, path, "node id"));
    t.splits[name] = std::move(ids.values);
  }
  return absl::OkStatus();
}

// edge_index.npy [2, E]: row 0 sources, row 1 targets, both mmap'ed.
absl::Status ReadEdgeIndex(const std::string& path, EdgeTypeData& t) {
  ASSIGN_OR_RETURN(internal::NpyArray<int64_t> ei, MapNpy<int64_t>(path, 2));
  if (ei.rows != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": shape must be [2, num_edges], has ", ei.rows, " rows"));
  }
  const int64_t e = ei.cols;
  t.src_ids = ei.values.Slice(0, e);
  t.dst_ids = ei.values.Slice(e, e);
  return absl::OkStatus();
}

// The optional edge_time[__<type>].npy next to an edge_index: int64 [E], one time per edge.
absl::Status ReadEdgeTime(const std::string& path, EdgeTypeData& t) {
  if (!Exists(path)) return absl::OkStatus();
  ASSIGN_OR_RETURN(internal::NpyArray<int64_t> time, MapNpy<int64_t>(path, 1));
  if (time.cols != 1 || time.rows != t.num_edges()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": shape must be [num_edges] = [", t.num_edges(),
                     "] (one int64 time per edge), has ", time.rows, " x ", time.cols));
  }
  t.time = std::move(time.values);
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, int64_t>> ReadNumNodes(const std::string& dir) {
  std::map<std::string, int64_t> out;
  const std::string path = dir + "/num_nodes.json";
  if (!Exists(path)) return out;
  ASSIGN_OR_RETURN(std::string text, common::ReadFileToString(path));
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a JSON object {\"type\": n}"));
  }
  for (const auto& [name, n] : j.items()) {
    if (!n.is_number_integer() || n.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"", name, "\" must be a count"));
    }
    out[name] = n.get<int64_t>();
  }
  return out;
}

}  // namespace

absl::StatusOr<Graph> ReadNpyFolder(const std::string& dir) {
  Graph g;
  EdgeTypeData& e = g.edge_types.emplace_back();
  e.src = e.dst = kHomogeneousNodeType;
  e.rel = kHomogeneousRelation;
  const std::string ei_path = dir + "/edge_index.npy";
  RETURN_IF_ERROR(ReadEdgeIndex(ei_path, e));
  RETURN_IF_ERROR(ReadEdgeTime(dir + "/edge_time.npy", e));
  ASSIGN_OR_RETURN(auto counts, ReadNumNodes(dir));
  NodeTypeData& t = g.node_types.emplace_back();
  t.name = kHomogeneousNodeType;
  auto it = counts.find(kHomogeneousNodeType);
  RETURN_IF_ERROR(ReadNodeFiles(dir, "", t, it == counts.end() ? -1 : it->second));
  if (t.num_nodes < 0) {  // neither x.npy nor y.npy: PyG's maybe_num_nodes
    ASSIGN_OR_RETURN(int64_t max_id, internal::MaxId(e, ei_path));
    t.num_nodes = max_id + 1;
    for (const auto& [name, ids] : t.splits) {
      RETURN_IF_ERROR(
          internal::CheckIdRange(ids, t.num_nodes, dir + "/" + name + "_idx.npy", "node id"));
    }
  }
  if (!t.time.empty() && t.time.size() != t.num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(dir, "/node_time.npy: ", t.time.size(),
                                                   " times for ", t.num_nodes, " nodes"));
  }
  RETURN_IF_ERROR(internal::CheckEdgeRange(e, t.num_nodes, t.num_nodes, ei_path));
  return g;
}

absl::StatusOr<Graph> ReadNpyHeteroFolder(const std::string& dir) {
  std::set<std::string> edge_files, time_files, types;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "edge_index__") && absl::EndsWith(name, ".npy")) {
      edge_files.insert(name);
    }
    if (absl::StartsWith(name, "edge_time__") && absl::EndsWith(name, ".npy")) {
      time_files.insert(name.substr(11, name.size() - 15));
    }
    if (absl::StartsWith(name, "node_time__") && absl::EndsWith(name, ".npy")) {
      types.insert(name.substr(11, name.size() - 15));
    }
    for (const char* prefix : {"x__", "y__"}) {
      if (absl::StartsWith(name, prefix) && absl::EndsWith(name, ".npy")) {
        types.insert(name.substr(3, name.size() - 7));
      }
    }
  }
  if (ec) return absl::NotFoundError(absl::StrCat(dir, ": cannot list: ", ec.message()));
  Graph g;
  for (const std::string& file : edge_files) {
    std::vector<std::string> parts =
        absl::StrSplit(absl::string_view(file).substr(12, file.size() - 16), "__");
    if (parts.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, "/", file, ": name must be edge_index__<src>__<rel>__<dst>.npy"));
    }
    EdgeTypeData& e = g.edge_types.emplace_back();
    e.src = parts[0];
    e.rel = parts[1];
    e.dst = parts[2];
    types.insert(e.src);
    types.insert(e.dst);
    RETURN_IF_ERROR(ReadEdgeIndex(absl::StrCat(dir, "/", file), e));
    RETURN_IF_ERROR(ReadEdgeTime(absl::StrCat(dir, "/edge_time__", e.Name(), ".npy"), e));
    time_files.erase(e.Name());
  }
  if (!time_files.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(dir, "/edge_time__", *time_files.begin(),
                                                   ".npy: no edge_index__", *time_files.begin(),
                                                   ".npy for these edge times"));
  }
  ASSIGN_OR_RETURN(auto counts, ReadNumNodes(dir));
  for (const auto& [name, n] : counts) types.insert(name);
  for (const std::string& name : types) {
    NodeTypeData& t = g.node_types.emplace_back();
    t.name = name;
    auto it = counts.find(name);
    RETURN_IF_ERROR(ReadNodeFiles(dir, "__" + name, t, it == counts.end() ? -1 : it->second));
    if (t.num_nodes < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, ": number of \"", name, "\" nodes unknown: no x__", name, ".npy or y__",
                       name, ".npy; add it to num_nodes.json"));
    }
    if (!t.time.empty() && t.time.size() != t.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(dir, "/node_time__", name, ".npy: ",
                                                     t.time.size(), " times for ", t.num_nodes,
                                                     " nodes"));
    }
  }
  for (const EdgeTypeData& e : g.edge_types) {
    RETURN_IF_ERROR(internal::CheckEdgeRange(e, g.node_types[g.NodeTypeIndex(e.src)].num_nodes,
                                             g.node_types[g.NodeTypeIndex(e.dst)].num_nodes,
                                             absl::StrCat(dir, "/edge_index__", e.Name(), ".npy")));
  }
  return g;
}

}  // namespace graphshard::partitioner
