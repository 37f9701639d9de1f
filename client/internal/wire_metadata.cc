// DecodeMetadata (wire.h): a server's Metadata, checked as DataLoss on arrival.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/internal/wire.h"

namespace graphshard::client::internal {

absl::StatusOr<ServerMetadata> DecodeMetadata(const v1::Metadata& m) {
  ServerMetadata out;
  out.part = m.part();
  out.num_parts = m.num_parts();
  out.num_nodes = m.num_nodes();
  out.part_offsets.assign(m.part_offsets().begin(), m.part_offsets().end());
  out.feat_dim = m.feat_dim();
  out.num_classes = m.num_classes();
  out.num_local_edges = m.num_local_edges();
  out.target_type = m.target_type();
  out.host_id = m.host_id();
  out.shm_prefix = m.shm_prefix();
  if (out.num_parts < 1 || out.part < 0 || out.part >= out.num_parts) {
    return absl::DataLossError(
        absl::StrCat("metadata: part ", out.part, " of num_parts ", out.num_parts));
  }
  // num_classes 0: an unlabelled graph (link prediction needs no labels; node tasks refuse it,
  // task.h CheckTaskData).
  if (out.feat_dim < 0 || out.num_classes < 0) {
    return absl::DataLossError(absl::StrCat("metadata: feat_dim ", out.feat_dim, ", num_classes ",
                                            out.num_classes, " (classes must be >= 0)"));
  }
  if (out.num_local_edges < 0) {
    return absl::DataLossError(
        absl::StrCat("metadata: num_local_edges ", out.num_local_edges, " (must be >= 0)"));
  }
  if (!out.part_offsets.empty() &&
      out.part_offsets.size() != static_cast<size_t>(out.num_parts) + 1) {
    return absl::DataLossError(absl::StrCat("metadata: ", out.part_offsets.size(),
                                            " part_offsets for ", out.num_parts, " parts"));
  }
  for (const v1::NodeTypeMeta& t : m.node_types()) {
    if (t.feat_dim() < 0 || t.num_classes() < 0 || t.num_nodes() < 0) {
      return absl::DataLossError(absl::StrCat("metadata: node type '", t.name(), "' has feat_dim ",
                                              t.feat_dim(), ", num_classes ", t.num_classes()));
    }
    std::vector<int64_t> offsets(t.part_offsets().begin(), t.part_offsets().end());
    if (!offsets.empty() &&
        (std::ssize(offsets) != out.num_parts + 1 || offsets.front() != 0 ||
         offsets.back() != t.num_nodes() || !std::is_sorted(offsets.begin(), offsets.end()))) {
      return absl::DataLossError(absl::StrCat(
          "metadata: node type '", t.name(), "' has part_offsets [", absl::StrJoin(offsets, ", "),
          "], not ", out.num_parts + 1, " rising offsets from 0 to ", t.num_nodes()));
    }
    out.node_types.push_back(
        {t.name(), t.num_nodes(), t.feat_dim(), t.num_classes(), t.has_time(), std::move(offsets)});
  }
  if (out.node_types.empty()) {  // an older server: the homogeneous summary only
    out.target_type = out.target_type.empty() ? "node" : out.target_type;
    out.node_types.push_back(
        {out.target_type, out.num_nodes, out.feat_dim, out.num_classes, false, out.part_offsets});
  }
  auto index_of = [&](const std::string& name) {
    for (size_t i = 0; i < out.node_types.size(); ++i) {
      if (out.node_types[i].name == name) return static_cast<int>(i);
    }
    return -1;
  };
  out.target = out.target_type.empty() ? 0 : index_of(out.target_type);
  if (out.target < 0) {
    return absl::DataLossError(
        absl::StrCat("metadata: unknown target type '", out.target_type, "'"));
  }
  out.target_type = out.node_types[static_cast<size_t>(out.target)].name;
  for (const v1::EdgeTypeMeta& e : m.edge_types()) {
    const int src = index_of(e.src());
    const int dst = index_of(e.dst());
    if (src < 0 || dst < 0) {
      return absl::DataLossError(
          absl::StrCat("metadata: edge type '", e.name(), "' names an unknown node type"));
    }
    EdgeTypeInfo info{e.name(), src, dst, {}, e.has_time()};
    for (const auto& entry : e.split_sizes()) {
      if (entry.second < 0) {
        return absl::DataLossError(absl::StrCat("metadata: edge type '", e.name(), "' split '",
                                                entry.first, "' has ", entry.second, " edges"));
      }
      info.split_sizes.emplace_back(entry.first, entry.second);
    }
    std::sort(info.split_sizes.begin(), info.split_sizes.end());
    out.edge_types.push_back(std::move(info));
  }
  if (out.edge_types.empty() && out.node_types.size() == 1) {
    const std::string& t = out.node_types[0].name;
    out.edge_types.push_back({absl::StrCat(t, "__to__", t), 0, 0, {}});
  }
  return out;
}

}  // namespace graphshard::client::internal
