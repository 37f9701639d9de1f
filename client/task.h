#ifndef GRAPHSHARD_CLIENT_TASK_H_
#define GRAPHSHARD_CLIENT_TASK_H_

// What differs between node classification and graph classification (--task), decided once
// from the options, so that the session, the epoch loop and the report ask for a setting rather
// than for the task. No Torch. Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/data_types.h"
#include "client/options.h"

namespace graphshard::client {

struct TaskPlan {
  // The streams' fanouts: --fanouts, or whole graphs (graph_task.h, WholeGraphFanouts).
  std::vector<int32_t> fanouts;
  // The model's layers: one per fanout (node tasks), or --layers (graph task).
  int64_t num_layers = 0;
  // Graph task: the trainers of a part regroup its training graphs every epoch (EpochChunk, as
  // PyTorch's DistributedSampler), so the training streams are opened per epoch. Node tasks
  // keep their shards, and one stream per server covers every remaining epoch.
  bool redraw_train_shards = false;
  // --task link: the predicted edge type's name (set by CheckTaskData's caller from
  // FindLinkEdgeType); empty for node and graph tasks.
  std::string link_edge_type{};
};

TaskPlan PlanTask(const TrainerOptions& options);

// FailedPrecondition unless the partition suits the task: --task graph needs a
// graph-classification (TU) dataset (graph_task.h, FindGraphTask), node and link tasks refuse
// one, --task link needs the edge type with edge splits (link_task.h, FindLinkEdgeType), and
// --temporal needs edge times and, for node seeds, the seed type's node times (the message
// names the files; a link task's seed times are its edge splits' times, checked by the server).
absl::Status CheckTaskData(const TrainerOptions& options, const ServerMetadata& metadata);

// PlanTask, and for --task link the predicted edge type (FindLinkEdgeType's errors).
absl::StatusOr<TaskPlan> PlanTaskFor(const TrainerOptions& options, const ServerMetadata& metadata);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_TASK_H_
