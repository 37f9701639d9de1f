#include "server/partition_service.h"

#include "absl/strings/str_cat.h"
#include "server/engine/minibatch_builder.h"
#include "server/proto_convert.h"

namespace graphshard::server {

grpc::Status PartitionServiceImpl::GetMetadata(grpc::ServerContext*, const v1::GetMetadataRequest*,
                                               v1::Metadata* response) {
  const common::Manifest& m = local_.part().manifest();
  const common::NodeTypeInfo& t = m.node_types[0];
  response->set_part(local_.part_index());
  response->set_num_parts(m.num_parts);
  response->set_num_nodes(t.num_nodes);
  for (int64_t o : t.part_offsets) response->add_part_offsets(o);
  response->set_feat_dim(t.feat_dim);
  response->set_num_classes(t.num_classes);
  response->set_num_local_edges(local_.edges().csc.num_edges());
  for (const auto& [name, ids] : local_.nodes().splits) {
    (*response->mutable_split_sizes())[name] = static_cast<int64_t>(ids.size());
  }
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::GetSplit(grpc::ServerContext*, const v1::GetSplitRequest* request,
                                            v1::GetSplitResponse* response) {
  const auto& splits = local_.nodes().splits;
  auto it = splits.find(request->split());
  if (it == splits.end()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("unknown split '", request->split(), "'"));
  }
  response->set_ids(ToBytes<int64_t>(it->second));
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::SampleOneHop(grpc::ServerContext*,
                                                const v1::SampleOneHopRequest* request,
                                                v1::SampleOneHopResponse* response) {
  absl::StatusOr<engine::OneHopRequest> req = FromProto(*request);
  if (!req.ok()) return ToGrpcStatus(req.status());
  absl::StatusOr<engine::OneHopResult> result = local_.SampleOneHop(*req);
  if (!result.ok()) return ToGrpcStatus(result.status());
  ToProto(*result, response);
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::GatherFeatures(grpc::ServerContext*,
                                                  const v1::GatherFeaturesRequest* request,
                                                  v1::GatherFeaturesResponse* response) {
  absl::StatusOr<std::vector<int64_t>> ids = FromBytes<int64_t>(request->ids(), "ids");
  if (!ids.ok()) return ToGrpcStatus(ids.status());
  absl::StatusOr<engine::FeatureRows> rows = local_.GatherFeatures(*ids);
  if (!rows.ok()) return ToGrpcStatus(rows.status());
  ToProto(*rows, response);
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::SampleMinibatch(grpc::ServerContext*,
                                                   const v1::SampleMinibatchRequest* request,
                                                   v1::Minibatch* response) {
  absl::StatusOr<engine::MinibatchRequest> req = FromProto(*request);
  if (!req.ok()) return ToGrpcStatus(req.status());
  absl::StatusOr<engine::Minibatch> batch = engine::BuildMinibatch(local_, peers_, *req);
  if (!batch.ok()) return ToGrpcStatus(batch.status());
  ToProto(*batch, response);
  return grpc::Status::OK;
}

}  // namespace graphshard::server
