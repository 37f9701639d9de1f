#ifndef GRAPHSHARD_CLIENT_SHARDS_H_
#define GRAPHSHARD_CLIENT_SHARDS_H_

// This rank's seeds: its share (assignment.h) of the train, val and test splits of the parts it
// reads, fetched once from their servers (GetSplit). No Torch.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/assignment.h"
#include "client/epoch_plan.h"
#include "client/server_set.h"
#include "client/task.h"

namespace graphshard::client {

struct Shards {
  std::vector<ShardSeeds> train, val, test;
  // Every share's whole part of the train split, for shards redrawn per epoch (TaskPlan).
  std::vector<ServerShare> shares;
  std::vector<std::vector<int64_t>> train_parts;
};

// Host-local (AssignHostLocal): rank_hosts[r] is rank r's host id (every rank's, all-gathered),
// the parts' hosts are servers.host_ids. With `link_edge_type` (--task link) the seeds are the
// positions of that edge type's split edges in each part. The errors of AssignHostLocal and of
// the servers' GetSplit.
absl::StatusOr<Shards> LoadShards(ServerSet& servers, int rank,
                                  const std::vector<std::string>& rank_hosts,
                                  const std::string& link_edge_type = "",
                                  Assignment mode = Assignment::kPart);

// The training shards of `epoch`: `shards.train`, or with TaskPlan::redraw_train_shards this
// epoch's EpochChunk of each part.
std::vector<ShardSeeds> TrainShards(const Shards& shards, const TaskPlan& plan, uint64_t seed,
                                    int64_t epoch);

int64_t TotalSeeds(const std::vector<ShardSeeds>& shards);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_SHARDS_H_
