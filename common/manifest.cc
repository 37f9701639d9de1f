#include "common/manifest.h"

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace graphshard::common {
namespace {

using nlohmann::json;

// Checked access to a JSON object: every error names the manifest path and the field.
class Fields {
 public:
  Fields(const json& obj, std::string path, std::string where)
      : obj_(obj), path_(std::move(path)), where_(std::move(where)) {}

  absl::Status Error(absl::string_view field, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": ", where_, field.empty() ? "" : ".", field, ": ", what));
  }
  absl::StatusOr<const json*> Get(absl::string_view key, json::value_t type) const {
    if (!obj_.is_object()) return Error("", "not an object");
    auto it = obj_.find(std::string(key));
    if (it == obj_.end()) return Error(key, "missing");
    bool ok = it->type() == type ||
              (type == json::value_t::number_integer &&
               it->type() == json::value_t::number_unsigned);
    if (!ok) return Error(key, absl::StrCat("wrong type (", it->type_name(), ")"));
    return &*it;
  }
  absl::StatusOr<int64_t> Int(absl::string_view key) const {
    ASSIGN_OR_RETURN(const json* v, Get(key, json::value_t::number_integer));
    return v->get<int64_t>();
  }
  absl::StatusOr<std::string> String(absl::string_view key) const {
    ASSIGN_OR_RETURN(const json* v, Get(key, json::value_t::string));
    return v->get<std::string>();
  }
  absl::StatusOr<std::vector<int64_t>> IntList(absl::string_view key) const {
    ASSIGN_OR_RETURN(const json* v, Get(key, json::value_t::array));
    std::vector<int64_t> out;
    for (const json& x : *v) {
      if (!x.is_number_integer()) return Error(key, "expected a list of integers");
      out.push_back(x.get<int64_t>());
    }
    return out;
  }
  bool Has(absl::string_view key) const {
    return obj_.is_object() && obj_.find(std::string(key)) != obj_.end();
  }
  std::string Child(absl::string_view key) const { return absl::StrCat(where_, ".", key); }
  const std::string& path() const { return path_; }

 private:
  const json& obj_;
  std::string path_;
  std::string where_;
};

absl::StatusOr<NodeTypeInfo> ParseNodeType(const json& j, const std::string& path,
                                           const std::string& where, int num_parts) {
  Fields f(j, path, where);
  NodeTypeInfo t;
  ASSIGN_OR_RETURN(t.name, f.String("name"));
  ASSIGN_OR_RETURN(t.num_nodes, f.Int("num_nodes"));
  ASSIGN_OR_RETURN(t.part_offsets, f.IntList("part_offsets"));
  ASSIGN_OR_RETURN(t.feat_dim, f.Int("feat_dim"));
  ASSIGN_OR_RETURN(t.num_classes, f.Int("num_classes"));
  if (f.Has("feat_dtype")) {
    ASSIGN_OR_RETURN(t.feat_dtype, f.String("feat_dtype"));
  }
  if (f.Has("label_dtype")) {
    ASSIGN_OR_RETURN(t.label_dtype, f.String("label_dtype"));
  }
  if (std::ssize(t.part_offsets) != num_parts + 1) {
    return f.Error("part_offsets", absl::StrCat("has ", t.part_offsets.size(),
                                                " entries, expected num_parts + 1 = ",
                                                num_parts + 1));
  }
  if (t.part_offsets.front() != 0 || t.part_offsets.back() != t.num_nodes) {
    return f.Error("part_offsets", "must start at 0 and end at num_nodes");
  }
  for (int p = 0; p < num_parts; ++p) {
    if (t.part_offsets[p + 1] < t.part_offsets[p]) {
      return f.Error("part_offsets", "must not decrease");
    }
  }
  if (t.num_nodes < 0 || t.feat_dim < 0 || t.num_classes < 0) {
    return f.Error("", "negative count");
  }
  return t;
}

absl::StatusOr<EdgeTypeInfo> ParseEdgeType(const json& j, const std::string& path,
                                           const std::string& where, int num_parts) {
  Fields f(j, path, where);
  EdgeTypeInfo t;
  ASSIGN_OR_RETURN(t.src, f.String("src"));
  ASSIGN_OR_RETURN(t.rel, f.String("rel"));
  ASSIGN_OR_RETURN(t.dst, f.String("dst"));
  ASSIGN_OR_RETURN(t.num_edges, f.Int("num_edges"));
  ASSIGN_OR_RETURN(t.part_num_edges, f.IntList("part_num_edges"));
  if (std::ssize(t.part_num_edges) != num_parts) {
    return f.Error("part_num_edges", "must have num_parts entries");
  }
  if (f.Has("max_in_degree")) {
    ASSIGN_OR_RETURN(t.max_in_degree, f.Int("max_in_degree"));
    if (t.max_in_degree < 0 || t.max_in_degree > t.num_edges) {
      return f.Error("max_in_degree", absl::StrCat(t.max_in_degree, " is outside 0..num_edges"));
    }
  }
  return t;
}

absl::StatusOr<FileInfo> ParseFileInfo(const json& j, const std::string& path,
                                       const std::string& where) {
  Fields f(j, path, where);
  FileInfo info;
  ASSIGN_OR_RETURN(std::string dtype, f.String("dtype"));
  auto parsed = ParseDTypeName(dtype);
  if (!parsed.ok()) return f.Error("dtype", parsed.status().message());
  info.dtype = *parsed;
  ASSIGN_OR_RETURN(info.shape, f.IntList("shape"));
  if (!ShapeFits(info.shape, DTypeSize(info.dtype))) {
    return f.Error("shape", "has a negative dim or more bytes than fit in 64 bits");
  }
  ASSIGN_OR_RETURN(info.checksum, f.String("checksum"));
  return info;
}

}  // namespace

const NodeTypeInfo* Manifest::FindNodeType(absl::string_view name) const {
  for (const NodeTypeInfo& t : node_types) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string ManifestToJson(const Manifest& m) {
  json j;
  j["format"] = "graphshard-partition";
  j["format_version"] = m.format_version;
  j["num_parts"] = m.num_parts;
  j["method"] = m.method;
  j["seed"] = m.seed;
  j["node_types"] = json::array();
  for (const NodeTypeInfo& t : m.node_types) {
    j["node_types"].push_back({{"name", t.name},
                               {"num_nodes", t.num_nodes},
                               {"part_offsets", t.part_offsets},
                               {"feat_dim", t.feat_dim},
                               {"feat_dtype", t.feat_dtype},
                               {"num_classes", t.num_classes},
                               {"label_dtype", t.label_dtype}});
  }
  j["edge_types"] = json::array();
  for (const EdgeTypeInfo& t : m.edge_types) {
    j["edge_types"].push_back({{"name", t.Name()},
                               {"src", t.src},
                               {"rel", t.rel},
                               {"dst", t.dst},
                               {"num_edges", t.num_edges},
                               {"part_num_edges", t.part_num_edges}});
    if (t.max_in_degree >= 0) j["edge_types"].back()["max_in_degree"] = t.max_in_degree;
  }
  j["splits"] = m.splits;
  if (!m.edge_splits.empty()) j["edge_splits"] = m.edge_splits;
  if (!m.edge_split_reverse.empty()) j["edge_split_reverse"] = m.edge_split_reverse;
  j["files"] = json::object();
  for (const auto& [name, info] : m.files) {
    j["files"][name] = {{"dtype", std::string(DTypeName(info.dtype))},
                        {"shape", info.shape},
                        {"checksum", info.checksum}};
  }
  return j.dump(2) + "\n";
}

absl::StatusOr<Manifest> ParseManifest(absl::string_view text, const std::string& path) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  Fields f(j, path, "manifest");
  Manifest m;
  ASSIGN_OR_RETURN(int64_t version, f.Int("format_version"));
  if (version != kManifestFormatVersion) {
    return f.Error("format_version", absl::StrCat("is ", version, ", this build reads ",
                                                  kManifestFormatVersion));
  }
  ASSIGN_OR_RETURN(int64_t num_parts, f.Int("num_parts"));
  if (num_parts < 1 || num_parts > 1 << 16) return f.Error("num_parts", "out of range");
  m.num_parts = static_cast<int>(num_parts);
  ASSIGN_OR_RETURN(m.method, f.String("method"));
  ASSIGN_OR_RETURN(int64_t seed, f.Int("seed"));
  m.seed = static_cast<uint64_t>(seed);

  ASSIGN_OR_RETURN(const json* ntypes, f.Get("node_types", json::value_t::array));
  for (size_t i = 0; i < ntypes->size(); ++i) {
    ASSIGN_OR_RETURN(NodeTypeInfo t, ParseNodeType((*ntypes)[i], path,
                                                   absl::StrCat("node_types[", i, "]"),
                                                   m.num_parts));
    m.node_types.push_back(std::move(t));
  }
  if (m.node_types.empty()) return f.Error("node_types", "empty");
  ASSIGN_OR_RETURN(const json* etypes, f.Get("edge_types", json::value_t::array));
  for (size_t i = 0; i < etypes->size(); ++i) {
    ASSIGN_OR_RETURN(EdgeTypeInfo t, ParseEdgeType((*etypes)[i], path,
                                                   absl::StrCat("edge_types[", i, "]"),
                                                   m.num_parts));
    if (m.FindNodeType(t.src) == nullptr || m.FindNodeType(t.dst) == nullptr) {
      return f.Error(absl::StrCat("edge_types[", i, "]"), "names an unknown node type");
    }
    m.edge_types.push_back(std::move(t));
  }
  ASSIGN_OR_RETURN(const json* splits, f.Get("splits", json::value_t::object));
  for (const auto& [split, per_type] : splits->items()) {
    if (!per_type.is_object()) return f.Error("splits", "expected objects");
    for (const auto& [ntype, sizes] : per_type.items()) {
      Fields sf(*splits, path, "manifest.splits");
      Fields tf(per_type, path, sf.Child(split));
      ASSIGN_OR_RETURN(std::vector<int64_t> v, tf.IntList(ntype));
      if (std::ssize(v) != m.num_parts) return tf.Error(ntype, "must have num_parts entries");
      m.splits[split][ntype] = std::move(v);
    }
  }
  if (j.contains("edge_splits")) {
    ASSIGN_OR_RETURN(const json* esplits, f.Get("edge_splits", json::value_t::object));
    for (const auto& [etype, per_split] : esplits->items()) {
      if (!per_split.is_object()) return f.Error("edge_splits", "expected objects");
      bool known = false;
      for (const EdgeTypeInfo& t : m.edge_types) known = known || t.Name() == etype;
      if (!known) return f.Error("edge_splits", absl::StrCat("names unknown edge type ", etype));
      Fields ef(*esplits, path, "manifest.edge_splits");
      Fields sf(per_split, path, ef.Child(etype));
      for (const auto& [split, sizes] : per_split.items()) {
        ASSIGN_OR_RETURN(std::vector<int64_t> v, sf.IntList(split));
        if (std::ssize(v) != m.num_parts) return sf.Error(split, "must have num_parts entries");
        m.edge_splits[etype][split] = std::move(v);
      }
    }
  }
  if (j.contains("edge_split_reverse")) {
    ASSIGN_OR_RETURN(const json* rev, f.Get("edge_split_reverse", json::value_t::object));
    Fields rf(*rev, path, "manifest.edge_split_reverse");
    for (const auto& [etype, value] : rev->items()) {
      ASSIGN_OR_RETURN(std::string reverse, rf.String(etype));
      bool known = false;
      for (const EdgeTypeInfo& t : m.edge_types) known = known || t.Name() == reverse;
      if (!known || !m.edge_splits.count(etype)) {
        return rf.Error(etype, "names an unknown edge type or one without edge splits");
      }
      m.edge_split_reverse[etype] = std::move(reverse);
    }
  }
  ASSIGN_OR_RETURN(const json* files, f.Get("files", json::value_t::object));
  for (const auto& [name, info] : files->items()) {
    ASSIGN_OR_RETURN(FileInfo fi, ParseFileInfo(info, path, absl::StrCat("files[", name, "]")));
    m.files[name] = std::move(fi);
  }
  return m;
}

absl::StatusOr<Manifest> ReadManifest(const std::string& dir) {
  std::string path = absl::StrCat(dir, "/", kManifestFileName);
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseManifest(text, path);
}

absl::Status WriteManifest(const std::string& dir, const Manifest& manifest) {
  return WriteFileAtomically(absl::StrCat(dir, "/", kManifestFileName), ManifestToJson(manifest));
}

std::string PartDir(int part) { return absl::StrCat("part_", part); }

std::string NodeFilePath(int part, absl::string_view ntype, absl::string_view file) {
  return absl::StrCat(PartDir(part), "/nodes/", ntype, "/", file);
}

std::string EdgeFilePath(int part, absl::string_view etype, absl::string_view file) {
  return absl::StrCat(PartDir(part), "/edges/", etype, "/", file);
}

std::string SplitFilePath(int part, absl::string_view ntype, absl::string_view split) {
  return absl::StrCat(PartDir(part), "/splits/", ntype, "/", split, ".npy");
}

std::string EdgeSplitFilePath(int part, absl::string_view etype, absl::string_view file) {
  return absl::StrCat(PartDir(part), "/edge_splits/", etype, "/", file, ".npy");
}

}  // namespace graphshard::common
