#include "client/graph_task.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graphshard::client {
namespace {

int IndexOfNodeType(const ServerMetadata& md, absl::string_view name) {
  for (size_t i = 0; i < md.node_types.size(); ++i) {
    if (md.node_types[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int IndexOfEdgeType(const ServerMetadata& md, absl::string_view name) {
  for (size_t i = 0; i < md.edge_types.size(); ++i) {
    if (md.edge_types[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

bool IsGraphDataset(const ServerMetadata& md) {
  return IndexOfEdgeType(md, kMembershipEdgeType) >= 0;
}

absl::StatusOr<GraphTaskLayout> FindGraphTask(const ServerMetadata& md) {
  GraphTaskLayout l;
  l.node_type = IndexOfNodeType(md, kGraphNodeType);
  l.graph_type = IndexOfNodeType(md, kGraphType);
  l.edge_type = IndexOfEdgeType(md, kGraphEdgeType);
  l.membership = IndexOfEdgeType(md, kMembershipEdgeType);
  if (l.node_type < 0 || l.graph_type < 0 || l.edge_type < 0 || l.membership < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--task graph needs a partitioned graph-classification (TU) dataset: node types \"",
        kGraphNodeType, "\" and \"", kGraphType, "\", edge types \"", kGraphEdgeType, "\" and \"",
        kMembershipEdgeType, "\"; this partition has ", md.node_types.size(), " node types and ",
        md.edge_types.size(), " edge types (target \"", md.target_type, "\")"));
  }
  if (md.target != l.graph_type ||
      md.node_types[static_cast<size_t>(l.graph_type)].num_classes < 2) {
    return absl::FailedPreconditionError(absl::StrCat("--task graph: the labelled type is \"",
                                                      md.target_type, "\", expected \"", kGraphType,
                                                      "\" with at least 2 classes"));
  }
  if (md.node_types[static_cast<size_t>(l.node_type)].feat_dim < 1) {
    return absl::FailedPreconditionError("--task graph: the nodes have no features (feat_dim 0)");
  }
  return l;
}

}  // namespace graphshard::client
