#include "client/task.h"

#include "absl/strings/str_cat.h"
#include "client/graph_task.h"
#include "common/status_macros.h"

namespace graphshard::client {

TaskPlan PlanTask(const TrainerOptions& o) {
  if (o.task == Task::kGraph) {
    return {.fanouts = WholeGraphFanouts(), .num_layers = o.layers, .redraw_train_shards = true};
  }
  return {.fanouts = o.fanouts,
          .num_layers = static_cast<int64_t>(o.fanouts.size()),
          .redraw_train_shards = false};
}

namespace {

// --temporal needs edge times and, for node seeds, the seeds' node times (the server checks
// the same; this names the input files to add before any stream opens).
absl::Status CheckTemporalData(const TrainerOptions& o, const ServerMetadata& md) {
  if (!o.temporal) return absl::OkStatus();
  bool any_edge_time = false;
  for (const EdgeTypeInfo& e : md.edge_types) any_edge_time = any_edge_time || e.has_time;
  const bool hetero = md.heterogeneous();
  if (!any_edge_time) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--temporal: this partition has no times: no edge type has edge times (partition an "
        "input with ",
        hetero ? "edge_time__<src>__<rel>__<dst>.npy" : "edge_time.npy", ", or ",
        hetero ? "node_time__<type>.npy" : "node_time.npy", " for the neighbours' times)"));
  }
  // Link prediction seeds each supervision edge at its own time (edge_splits/<et>/
  // <split>_time.npy, written from the edge times; the server names it when missing).
  if (o.task == Task::kLink) return absl::OkStatus();
  const NodeTypeInfo& seeds = md.node_types[static_cast<size_t>(md.target)];
  if (!seeds.has_time) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--temporal: the seeds ('", seeds.name, "' nodes) have no node times, which are the ",
        "seed times (partition an input with ",
        hetero ? absl::StrCat("node_time__", seeds.name, ".npy") : "node_time.npy", ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckTaskData(const TrainerOptions& o, const ServerMetadata& md) {
  if (o.task == Task::kGraph) return FindGraphTask(md).status();
  RETURN_IF_ERROR(CheckTemporalData(o, md));
  if (IsGraphDataset(md)) {
    return absl::FailedPreconditionError(
        "this partition is a graph-classification (TU) dataset: pass --task graph");
  }
  if (o.task == Task::kLink) return FindLinkEdgeType(o.link, md).status();
  if (md.node_types[static_cast<size_t>(md.target)].num_classes < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("node classification needs labels: node type '", md.target_type,
                     "' has none (for link prediction pass --task link)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TaskPlan> PlanTaskFor(const TrainerOptions& o, const ServerMetadata& md) {
  TaskPlan plan = PlanTask(o);
  if (o.task == Task::kLink) {
    ASSIGN_OR_RETURN(const int e, FindLinkEdgeType(o.link, md));
    plan.link_edge_type = md.edge_types[static_cast<size_t>(e)].name;
  }
  return plan;
}

}  // namespace graphshard::client
