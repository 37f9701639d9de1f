#include "client/shards.h"

#include <utility>

#include "common/status_macros.h"

namespace graphshard::client {

absl::StatusOr<Shards> LoadShards(ServerSet& servers, int rank,
                                  const std::vector<std::string>& rank_hosts,
                                  const std::string& link_edge_type, Assignment mode) {
  ASSIGN_OR_RETURN(std::vector<ServerShare> shares,
                   AssignHostLocal(rank, rank_hosts, servers.host_ids, mode));
  Shards shards;
  shards.shares = shares;
  for (const ServerShare& share : shares) {
    PartitionClient& client = *servers.clients[static_cast<size_t>(share.part)];
    for (auto [name, out] : {std::pair{"train", &shards.train}, std::pair{"val", &shards.val},
                             std::pair{"test", &shards.test}}) {
      ASSIGN_OR_RETURN(std::vector<int64_t> ids, client.GetSplit(name, link_edge_type));
      if (out == &shards.train) shards.train_parts.push_back(ids);
      absl::Span<const int64_t> chunk = ChunkOf(ids, share.chunk, share.num_chunks);
      out->push_back({share.part, std::vector<int64_t>(chunk.begin(), chunk.end()), name});
    }
  }
  return shards;
}

std::vector<ShardSeeds> TrainShards(const Shards& shards, const TaskPlan& plan, uint64_t seed,
                                    int64_t epoch) {
  if (!plan.redraw_train_shards) return shards.train;
  std::vector<ShardSeeds> out;
  for (size_t i = 0; i < shards.shares.size(); ++i) {
    out.push_back({shards.shares[i].part,
                   EpochChunk(shards.train_parts[i], shards.shares[i], seed, epoch), "train"});
  }
  return out;
}

int64_t TotalSeeds(const std::vector<ShardSeeds>& shards) {
  int64_t n = 0;
  for (const ShardSeeds& s : shards) n += static_cast<int64_t>(s.ids.size());
  return n;
}

}  // namespace graphshard::client
