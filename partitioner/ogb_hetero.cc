// OGB's raw heterogeneous layout (ogbn-mag), read into a Graph:
//   raw/num-node-dict.csv.gz        line 1: type names, line 2: counts (same order)
//   raw/triplet-type-list.csv.gz    one "src,rel,dst" per line
//   raw/relations/<src>___<rel>___<dst>/{edge.csv.gz,num-edge-list.csv.gz}
//   raw/node-feat/<type>/node-feat.csv.gz, raw/node-label/<type>/node-label.csv.gz (optional)
//   split/<name>/<type>/{train,valid,test}.csv.gz (types without a folder have no split)

#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "partitioner/internal/gz_csv.h"
#include "partitioner/internal/ogb_read.h"
#include "partitioner/read_input.h"

namespace graphshard::partitioner {
namespace {

namespace fs = std::filesystem;
using internal::GzLineReader;

bool Exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

absl::Status ReadNodeDict(const std::string& path, Graph& g) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  absl::string_view line;
  ASSIGN_OR_RETURN(bool more, reader->Next(&line));
  if (!more) return reader->Error("empty file: expected a line of node type names");
  for (absl::string_view name : absl::StrSplit(line, ',')) {
    g.node_types.emplace_back().name = std::string(name);
  }
  ASSIGN_OR_RETURN(more, reader->Next(&line));
  if (!more) return reader->Error("expected a second line with the node counts");
  std::vector<absl::string_view> counts = absl::StrSplit(line, ',');
  if (counts.size() != g.node_types.size()) {
    return reader->Error(
        absl::StrCat(counts.size(), " counts for ", g.node_types.size(), " node types"));
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    if (!internal::ParseInt64(counts[i], &g.node_types[i].num_nodes) ||
        g.node_types[i].num_nodes < 0) {
      return reader->Error(absl::StrCat("column ", i + 1, ": expected a count, got \"",
                                        counts[i].substr(0, 40), "\""));
    }
  }
  ASSIGN_OR_RETURN(more, reader->Next(&line));
  if (more) return reader->Error("expected two lines");
  return absl::OkStatus();
}

absl::Status ReadTriplets(const std::string& path, Graph& g) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  absl::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    std::vector<std::string> f = absl::StrSplit(line, ',');
    if (f.size() != 3) return reader->Error("expected \"src_type,relation,dst_type\"");
    if (g.NodeTypeIndex(f[0]) < 0 || g.NodeTypeIndex(f[2]) < 0) {
      return reader->Error("names a node type missing from num-node-dict.csv.gz");
    }
    EdgeTypeData& e = g.edge_types.emplace_back();
    e.src = f[0];
    e.rel = f[1];
    e.dst = f[2];
  }
  return absl::OkStatus();
}

absl::Status ReadRelation(const std::string& raw, const Graph& g, EdgeTypeData& e) {
  const std::string dir = absl::StrCat(raw, "relations/", e.src, "___", e.rel, "___", e.dst, "/");
  ASSIGN_OR_RETURN(int64_t m, internal::ReadCount(dir + "num-edge-list.csv.gz"));
  std::vector<int64_t> src, dst;
  RETURN_IF_ERROR(
      internal::ReadEdgeFile(dir + "edge.csv.gz", g.node_types[g.NodeTypeIndex(e.src)].num_nodes,
                             g.node_types[g.NodeTypeIndex(e.dst)].num_nodes, m, src, dst));
  e.src_ids = Array<int64_t>::Owned(std::move(src));
  e.dst_ids = Array<int64_t>::Owned(std::move(dst));
  return absl::OkStatus();
}

absl::Status ReadNodeData(const std::string& raw, const std::string& split_dir, NodeTypeData& t) {
  const std::string feat = absl::StrCat(raw, "node-feat/", t.name, "/node-feat.csv.gz");
  if (Exists(feat)) {
    std::vector<float> values;
    RETURN_IF_ERROR(internal::ReadFeatureFile(feat, t.num_nodes, t.feat_dim, values));
    t.features = Array<float>::Owned(std::move(values));
  }
  const std::string label = absl::StrCat(raw, "node-label/", t.name, "/node-label.csv.gz");
  if (Exists(label)) {
    std::vector<int64_t> values;
    RETURN_IF_ERROR(internal::ReadLabelFile(label, t.num_nodes, values, t.num_classes));
    t.labels = Array<int64_t>::Owned(std::move(values));
  }
  const std::string split = absl::StrCat(split_dir, "/", t.name);
  if (!split_dir.empty() && Exists(split)) {
    std::map<std::string, std::vector<int64_t>> splits;
    RETURN_IF_ERROR(internal::ReadSplitFolder(split, t.num_nodes, splits));
    for (auto& [name, ids] : splits) t.splits[name] = Array<int64_t>::Owned(std::move(ids));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Graph> ReadOgbHeterogeneous(const std::string& dir, const std::string& split_name) {
  const std::string raw = absl::StrCat(dir, "/raw/");
  Graph g;
  RETURN_IF_ERROR(ReadNodeDict(raw + "num-node-dict.csv.gz", g));
  RETURN_IF_ERROR(ReadTriplets(raw + "triplet-type-list.csv.gz", g));
  for (EdgeTypeData& e : g.edge_types) RETURN_IF_ERROR(ReadRelation(raw, g, e));
  std::string split_dir;
  if (Exists(dir + "/split")) {
    ASSIGN_OR_RETURN(split_dir, internal::FindSplitDir(dir, split_name));
  }
  for (NodeTypeData& t : g.node_types) RETURN_IF_ERROR(ReadNodeData(raw, split_dir, t));
  return g;
}

}  // namespace graphshard::partitioner
