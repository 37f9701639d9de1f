#include "trainer/task.h"

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
  return absl::OkStatus();
}

}  // namespace graphshard::trainer
