#ifndef GRAPHSHARD_SERVER_PARTITION_SERVICE_H_
#define GRAPHSHARD_SERVER_PARTITION_SERVICE_H_

// The gRPC service: proto -> engine call -> proto, nothing else. Thread-safe.

#include "proto/graphshard.grpc.pb.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"

namespace graphshard::server {

class PartitionServiceImpl final : public v1::PartitionService::Service {
 public:
  // `local` and `peers` must outlive the service.
  PartitionServiceImpl(const engine::LocalPart& local, engine::Peers& peers)
      : local_(local), peers_(peers) {}

  grpc::Status GetMetadata(grpc::ServerContext* context, const v1::GetMetadataRequest* request,
                           v1::Metadata* response) override;
  grpc::Status GetSplit(grpc::ServerContext* context, const v1::GetSplitRequest* request,
                        v1::GetSplitResponse* response) override;
  grpc::Status SampleOneHop(grpc::ServerContext* context, const v1::SampleOneHopRequest* request,
                            v1::SampleOneHopResponse* response) override;
  grpc::Status GatherFeatures(grpc::ServerContext* context,
                              const v1::GatherFeaturesRequest* request,
                              v1::GatherFeaturesResponse* response) override;
  grpc::Status SampleMinibatch(grpc::ServerContext* context,
                               const v1::SampleMinibatchRequest* request,
                               v1::Minibatch* response) override;

 private:
  const engine::LocalPart& local_;
  engine::Peers& peers_;
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_PARTITION_SERVICE_H_
