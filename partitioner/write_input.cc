// Writers of input layouts (for `generate`): OGB's heterogeneous raw layout and .npy folders.

#include "partitioner/write_input.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/status_macros.h"
#include "partitioner/internal/atomic_dir.h"
#include "partitioner/internal/gz_csv.h"

namespace graphshard::partitioner {
namespace {

absl::Status WriteOgbNodeType(const NodeTypeData& t, const std::string& root,
                              const std::string& split_name, internal::AtomicDir& out) {
  if (t.feat_dim > 0) {
    RETURN_IF_ERROR(out.MakeDirs("raw/node-feat/" + t.name));
    RETURN_IF_ERROR(internal::WriteGzLines(root + "/raw/node-feat/" + t.name + "/node-feat.csv.gz",
                                           t.num_nodes, [&](int64_t v, std::string* s) {
                                             for (int64_t k = 0; k < t.feat_dim; ++k) {
                                               if (k > 0) s->push_back(',');
                                               internal::AppendFloat(t.features[v * t.feat_dim + k],
                                                                     s);
                                             }
                                           }));
  }
  if (!t.labels.empty()) {
    RETURN_IF_ERROR(out.MakeDirs("raw/node-label/" + t.name));
    RETURN_IF_ERROR(internal::WriteGzLines(
        root + "/raw/node-label/" + t.name + "/node-label.csv.gz", t.num_nodes,
        [&](int64_t v, std::string* s) { absl::StrAppend(s, t.labels[v]); }));
  }
  if (t.splits.empty()) return absl::OkStatus();
  const std::string rel = absl::StrCat("split/", split_name, "/", t.name);
  RETURN_IF_ERROR(out.MakeDirs(rel));
  for (const auto& [file, name] :
       {std::pair{"train", "train"}, {"valid", "val"}, {"test", "test"}}) {
    auto it = t.splits.find(name);
    const Array<int64_t> ids = it == t.splits.end() ? Array<int64_t>() : it->second;
    RETURN_IF_ERROR(
        internal::WriteGzLines(absl::StrCat(root, "/", rel, "/", file, ".csv.gz"), ids.size(),
                               [&](int64_t i, std::string* s) { absl::StrAppend(s, ids[i]); }));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status SaveNpy(const std::string& path, std::vector<int64_t> shape,
                     absl::Span<const T> values) {
  return common::WriteNpy<T>(path, std::move(shape), values).status();
}

absl::Status WriteNpyNodeType(const NodeTypeData& t, const std::string& root,
                              const std::string& suffix) {
  if (t.feat_dim > 0) {
    RETURN_IF_ERROR(SaveNpy<float>(absl::StrCat(root, "/x", suffix, ".npy"),
                                   {t.num_nodes, t.feat_dim}, t.features.span()));
  }
  if (!t.labels.empty()) {
    RETURN_IF_ERROR(
        SaveNpy<int64_t>(absl::StrCat(root, "/y", suffix, ".npy"), {t.num_nodes}, t.labels.span()));
  }
  for (const auto& [name, ids] : t.splits) {
    RETURN_IF_ERROR(SaveNpy<int64_t>(absl::StrCat(root, "/", name, "_idx", suffix, ".npy"),
                                     {ids.size()}, ids.span()));
  }
  if (!t.time.empty()) {
    RETURN_IF_ERROR(SaveNpy<int64_t>(absl::StrCat(root, "/node_time", suffix, ".npy"),
                                     {t.num_nodes}, t.time.span()));
  }
  return absl::OkStatus();
}

absl::Status WriteEdgeTime(const EdgeTypeData& e, const std::string& path) {
  if (e.time.empty()) return absl::OkStatus();
  return SaveNpy<int64_t>(path, {e.num_edges()}, e.time.span());
}

absl::Status WriteEdgeIndex(const EdgeTypeData& e, const std::string& path) {
  ASSIGN_OR_RETURN(auto w,
                   common::NpyWriter::Create(path, common::DType::kInt64, {2, e.num_edges()}));
  RETURN_IF_ERROR(w->AppendValues(e.src_ids.span()));
  RETURN_IF_ERROR(w->AppendValues(e.dst_ids.span()));
  return w->Finish().status();
}

}  // namespace

absl::Status WriteOgbHeterogeneous(const Graph& g, const std::string& dir,
                                   const std::string& split_name) {
  RETURN_IF_ERROR(ValidateGraph(g));
  ASSIGN_OR_RETURN(internal::AtomicDir out, internal::AtomicDir::Create(dir, /*replace=*/false));
  const std::string root = out.tmp_path();
  RETURN_IF_ERROR(out.MakeDirs("raw/relations"));
  RETURN_IF_ERROR(
      internal::WriteGzLines(root + "/raw/num-node-dict.csv.gz", 2, [&](int64_t r, std::string* s) {
        for (size_t i = 0; i < g.node_types.size(); ++i) {
          if (i > 0) s->push_back(',');
          if (r == 0) absl::StrAppend(s, g.node_types[i].name);
          if (r == 1) absl::StrAppend(s, g.node_types[i].num_nodes);
        }
      }));
  RETURN_IF_ERROR(internal::WriteGzLines(root + "/raw/triplet-type-list.csv.gz",
                                         std::ssize(g.edge_types), [&](int64_t i, std::string* s) {
                                           const EdgeTypeData& e = g.edge_types[i];
                                           absl::StrAppend(s, e.src, ",", e.rel, ",", e.dst);
                                         }));
  for (const EdgeTypeData& e : g.edge_types) {
    const std::string rel = absl::StrCat("raw/relations/", e.src, "___", e.rel, "___", e.dst);
    RETURN_IF_ERROR(out.MakeDirs(rel));
    RETURN_IF_ERROR(internal::WriteGzLines(
        absl::StrCat(root, "/", rel, "/num-edge-list.csv.gz"), 1,
        [&](int64_t, std::string* s) { absl::StrAppend(s, e.num_edges()); }));
    RETURN_IF_ERROR(internal::WriteGzLines(
        absl::StrCat(root, "/", rel, "/edge.csv.gz"), e.num_edges(),
        [&](int64_t i, std::string* s) { absl::StrAppend(s, e.src_ids[i], ",", e.dst_ids[i]); }));
  }
  for (const NodeTypeData& t : g.node_types) {
    RETURN_IF_ERROR(WriteOgbNodeType(t, root, split_name, out));
  }
  return out.Commit();
}

absl::Status WriteNpyInput(const Graph& g, const std::string& dir) {
  RETURN_IF_ERROR(ValidateGraph(g));
  ASSIGN_OR_RETURN(internal::AtomicDir out, internal::AtomicDir::Create(dir, /*replace=*/false));
  const std::string root = out.tmp_path();
  const bool homogeneous = g.IsHomogeneous() && g.node_types[0].name == kHomogeneousNodeType &&
                           (g.edge_types.empty() || g.edge_types[0].rel == kHomogeneousRelation);
  if (homogeneous) {
    RETURN_IF_ERROR(WriteNpyNodeType(g.node_types[0], root, ""));
    if (!g.edge_types.empty()) {
      RETURN_IF_ERROR(WriteEdgeIndex(g.edge_types[0], root + "/edge_index.npy"));
      RETURN_IF_ERROR(WriteEdgeTime(g.edge_types[0], root + "/edge_time.npy"));
    }
    return out.Commit();
  }
  nlohmann::json counts = nlohmann::json::object();
  for (const NodeTypeData& t : g.node_types) {
    counts[t.name] = t.num_nodes;
    RETURN_IF_ERROR(WriteNpyNodeType(t, root, "__" + t.name));
  }
  RETURN_IF_ERROR(common::WriteFileAtomically(root + "/num_nodes.json", counts.dump(1) + "\n"));
  for (const EdgeTypeData& e : g.edge_types) {
    RETURN_IF_ERROR(WriteEdgeIndex(e, absl::StrCat(root, "/edge_index__", e.Name(), ".npy")));
    RETURN_IF_ERROR(WriteEdgeTime(e, absl::StrCat(root, "/edge_time__", e.Name(), ".npy")));
  }
  return out.Commit();
}

}  // namespace graphshard::partitioner
