#ifndef GRAPHSHARD_TRAINER_TASK_H_
#define GRAPHSHARD_TRAINER_TASK_H_

// What differs between node classification and graph classification (--task), decided once
// from the options, so that the session, the epoch loop and the report ask for a setting rather
// than for the task. No Torch. Pure functions; thread-safe.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "trainer/data_types.h"
#include "trainer/options.h"

namespace graphshard::trainer {

struct TaskPlan {
  // The streams' fanouts: --fanouts, or whole graphs (graph_task.h, WholeGraphFanouts).
  std::vector<int32_t> fanouts;
  // The model's layers: one per fanout (node tasks), or --layers (graph task).
  int64_t num_layers = 0;
  // Graph task: the trainers of a part regroup its training graphs every epoch (EpochChunk, as
  // PyTorch's DistributedSampler), so the training streams are opened per epoch. Node tasks
  // keep their shards, and one stream per server covers every remaining epoch.
  bool redraw_train_shards = false;
};

TaskPlan PlanTask(const TrainerOptions& options);

// FailedPrecondition unless the partition suits the task: --task graph needs a
// graph-classification (TU) dataset (graph_task.h, FindGraphTask), and node tasks refuse one;
// --temporal needs edge times and the seed type's node times (the message names the files).
absl::Status CheckTaskData(const TrainerOptions& options, const ServerMetadata& metadata);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_TASK_H_
