#include "rpc/stats.h"

#include "proto/graphshard.grpc.pb.h"
#include "rpc/status.h"

namespace graphshard::rpc {

absl::StatusOr<v1::Stats> FetchStats(const std::shared_ptr<grpc::Channel>& channel,
                                     absl::Time deadline) {
  std::unique_ptr<v1::PartitionService::Stub> stub = v1::PartitionService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  v1::Stats stats;
  const grpc::Status status = stub->GetStats(&context, v1::GetStatsRequest(), &stats);
  if (!status.ok()) return FromGrpcStatus(status);
  return stats;
}

}  // namespace graphshard::rpc
