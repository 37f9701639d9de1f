#include "partitioner/read_input.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "partitioner/tu_dataset.h"

namespace graphshard::partitioner {
namespace {

namespace fs = std::filesystem;

bool Exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

bool HasHeteroNpy(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "edge_index__") && absl::EndsWith(name, ".npy")) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> DetectLayout(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return absl::NotFoundError(absl::StrCat(path, ": no such input"));
  if (!fs::is_directory(path, ec)) return std::string("edgelist");
  if (Exists(path + "/raw/num-node-list.csv.gz")) return std::string("ogb");
  if (Exists(path + "/raw/num-node-dict.csv.gz")) return std::string("ogb-hetero");
  if (Exists(path + "/edge_index.npy")) return std::string("npy");
  if (HasHeteroNpy(path)) return std::string("npy-hetero");
  absl::StatusOr<TuLocation> tu = FindTuDataset(path);
  if (tu.ok()) return std::string("tu");
  if (tu.status().code() != absl::StatusCode::kNotFound) return tu.status();
  return absl::InvalidArgumentError(
      absl::StrCat(path,
                   ": unknown input layout: no raw/num-node-list.csv.gz (OGB), "
                   "raw/num-node-dict.csv.gz (OGB heterogeneous), edge_index.npy (.npy folder) or "
                   "edge_index__<src>__<rel>__<dst>.npy (heterogeneous .npy folder), "
                   "<DS>_graph_indicator.txt (TU graph classification); an edge list "
                   "is a file, not a folder"));
}

absl::StatusOr<Graph> ReadGraph(const std::string& path, const ReadOptions& o) {
  std::string layout = o.format;
  if (layout.empty()) {
    ASSIGN_OR_RETURN(layout, DetectLayout(path));
  }
  if (layout == "ogb") {
    OgbReadOptions ogb;
    ogb.split_name = o.split_name;
    return ReadOgbHomogeneous(path, ogb);
  }
  if (layout == "ogb-hetero") return ReadOgbHeterogeneous(path, o.split_name);
  if (layout == "npy") return ReadNpyFolder(path);
  if (layout == "npy-hetero") return ReadNpyHeteroFolder(path);
  if (layout == "edgelist") return ReadEdgeList(path, o);
  if (layout == "tu") {
    ASSIGN_OR_RETURN(TuDataset tu, ReadTuDataset(path));
    return GraphFromTu(tu, o.split_seed);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown input format \"", layout, "\" (ogb, ogb-hetero, npy, npy-hetero, edgelist, tu)"));
}

}  // namespace graphshard::partitioner
