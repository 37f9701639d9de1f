#include "trainer/task.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "trainer/graph_task.h"

namespace graphshard::trainer {

TaskPlan PlanTask(const TrainerOptions& o) {
  if (o.task == Task::kGraph) {
    return {.fanouts = WholeGraphFanouts(), .num_layers = o.layers, .redraw_train_shards = true};
  }
  return {.fanouts = o.fanouts,
          .num_layers = static_cast<int64_t>(o.fanouts.size()),
          .redraw_train_shards = false};
}

absl::Status CheckTaskData(const TrainerOptions& o, const ServerMetadata& md) {
  if (o.task == Task::kGraph) return FindGraphTask(md).status();
  if (IsGraphDataset(md)) {
    return absl::FailedPreconditionError(
        "this partition is a graph-classification (TU) dataset: pass --task graph");
  }
  if (o.task == Task::kLink) return FindLinkEdgeType(o.link, md).status();
  if (md.node_types[static_cast<size_t>(md.target)].num_classes < 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node classification needs labels: node type '", md.target_type,
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

}  // namespace graphshard::trainer
