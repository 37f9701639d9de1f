#include "server/partition_service.h"

#include <memory>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "rpc/feature_dtype_proto.h"
#include "rpc/security.h"
#include "rpc/status.h"
#include "server/engine/any_part_rows.h"
#include "server/engine/minibatch_builder.h"
#include "server/engine/request_cost.h"
#include "server/internal/service_calls.h"
#include "server/proto_convert.h"
#include "server/shm_batch_writer.h"
#include "shm/ring.h"

namespace graphshard::server {
namespace {

// What a unary answer holds at its peak: the engine's arrays, the response message, and the
// message serialized by gRPC.
constexpr double kAnswerCopies = 3;

using internal::Bytes;
using internal::ClientKey;
using internal::OutOfMemory;

}  // namespace

grpc::Status PartitionServiceImpl::GetMetadata(grpc::ServerContext*,
                                               const v1::GetMetadataRequest* request,
                                               v1::Metadata* response) {
  CallTimer timer(stats_, "GetMetadata");
  const common::Manifest& m = local_.part().manifest();
  response->set_part(local_.part_index());
  if (!options_.token.empty() && !request->nonce().empty()) {
    if (request->nonce().size() > 64) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "GetMetadata nonce: at most 64 bytes");
    }
    response->set_job_proof(rpc::JobProof(options_.token, request->nonce(), local_.part_index()));
  }
  response->set_shm_prefix(options_.shm_prefix);
  response->set_num_parts(m.num_parts);
  response->set_host_id(options_.host_id);
  if (options_.host_proof != nullptr) response->set_host_proof_name(options_.host_proof->name());
  response->set_bulk_port(options_.bulk_port);
  response->set_metrics_port(options_.metrics_port);
  for (const engine::NodeType& t : local_.node_types()) {
    const common::NodeTypeInfo* info = m.FindNodeType(t.name);
    v1::NodeTypeMeta* n = response->add_node_types();
    n->set_name(t.name);
    n->set_num_nodes(info->num_nodes);
    for (int64_t o : info->part_offsets) n->add_part_offsets(o);
    n->set_feat_dim(info->feat_dim);
    n->set_num_classes(info->num_classes);
    n->set_has_time(t.shard->has_time);
    for (const auto& [split, ids] : t.shard->splits) {
      (*n->mutable_split_sizes())[split] = static_cast<int64_t>(ids.size());
    }
  }
  int64_t local_edges = 0;
  for (const engine::EdgeType& e : local_.edge_types()) {
    v1::EdgeTypeMeta* out = response->add_edge_types();
    out->set_name(e.name);
    out->set_src(e.shard->info.src);
    out->set_rel(e.shard->info.rel);
    out->set_dst(e.shard->info.dst);
    out->set_num_local_edges(e.shard->csc.num_edges());
    for (const auto& [split, view] : e.shard->splits) {
      (*out->mutable_split_sizes())[split] = view.size();
    }
    out->set_has_time(e.shard->has_time);
    local_edges += e.shard->csc.num_edges();
  }
  const v1::NodeTypeMeta& target = response->node_types(local_.target_type());
  response->set_target_type(target.name());
  response->set_num_nodes(target.num_nodes());
  *response->mutable_part_offsets() = target.part_offsets();
  response->set_feat_dim(target.feat_dim());
  response->set_num_classes(target.num_classes());
  response->set_num_local_edges(local_edges);
  *response->mutable_split_sizes() = target.split_sizes();
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::GetSplit(grpc::ServerContext*, const v1::GetSplitRequest* request,
                                            v1::GetSplitResponse* response) {
  CallTimer timer(stats_, "GetSplit");
  if (!request->edge_type().empty()) {  // link prediction: positions of the split's edges
    const int e = local_.EdgeTypeIndex(request->edge_type());
    if (e < 0) {
      timer.set_ok(false);
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("unknown edge type '", request->edge_type(), "'"));
    }
    const auto& splits = local_.edge_types()[static_cast<size_t>(e)].shard->splits;
    auto it = splits.find(request->split());
    if (it == splits.end()) {
      timer.set_ok(false);
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("edge type '", request->edge_type(), "' has no edge split '",
                                       request->split(), "' (partition with --edge-split)"));
    }
    std::vector<int64_t> positions(static_cast<size_t>(it->second.size()));
    for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int64_t>(i);
    response->set_ids(ToBytes<int64_t>(positions));
    return grpc::Status::OK;
  }
  int t = request->node_type().empty() ? local_.target_type()
                                       : local_.NodeTypeIndex(request->node_type());
  if (t < 0) {
    timer.set_ok(false);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("unknown node type '", request->node_type(), "'"));
  }
  const auto& splits = local_.node_types()[t].shard->splits;
  auto it = splits.find(request->split());
  if (it == splits.end()) {
    timer.set_ok(false);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("unknown split '", request->split(), "'"));
  }
  response->set_ids(ToBytes<int64_t>(it->second));
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::SampleOneHop(grpc::ServerContext* context,
                                                const v1::SampleOneHopRequest* request,
                                                v1::SampleOneHopResponse* response) {
  CallTimer timer(stats_, "SampleOneHop");
  try {
    absl::StatusOr<engine::OneHopRequest> req = FromProto(*request);
    absl::Status checked = req.ok() ? local_.CheckHopCost(*req) : req.status();
    absl::StatusOr<std::vector<engine::HopResult>> result =
        checked.ok() ? local_.SampleOneHop(*req, [context] { return context->IsCancelled(); })
                     : checked;
    timer.set_ok(result.ok());
    if (!result.ok()) return rpc::ToGrpcStatus(result.status());
    ToProto(*result, response);
  } catch (const std::bad_alloc&) {
    timer.set_ok(false);
    return OutOfMemory("sampling a hop");
  }
  stats_.AddBytesSent(static_cast<int64_t>(response->ByteSizeLong()));
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::GatherFeatures(grpc::ServerContext* context,
                                                  const v1::GatherFeaturesRequest* request,
                                                  v1::GatherFeaturesResponse* response) {
  CallTimer timer(stats_, "GatherFeatures");
  try {
    return Gather(*context, *request, response, timer);
  } catch (const std::bad_alloc&) {
    timer.set_ok(false);
    return OutOfMemory("gathering features");
  }
}

grpc::Status PartitionServiceImpl::Gather(grpc::ServerContext& context,
                                          const v1::GatherFeaturesRequest& r,
                                          v1::GatherFeaturesResponse* response, CallTimer& timer) {
  const v1::GatherFeaturesRequest* request = &r;
  absl::StatusOr<std::vector<engine::TypedIds>> items = FromProto(*request);
  absl::StatusOr<engine::FeatureDtype> dtype = rpc::FeatureDtypeFromProto(request->dtype());
  // The budget per request first (the clearer message), then memory.
  const bool same_host = SameHost(request->client_host_id(), request->client_host_proof()) &&
                         request->shm_key().size() >= shm::kMinShmKeyBytes;
  absl::Status within =
      !items.ok() ? items.status()
      : !dtype.ok() ? dtype.status()
                    : engine::CheckCost(engine::GatherCost(local_, *items, *dtype),
                                        local_.limits(), "this GatherFeatures");
  if (within.ok() && !same_host) {  // inline: the rows must fit one message
    within = engine::CheckAnswer(engine::GatherCost(local_, *items, *dtype),
                                 options_.max_answer_bytes, "this GatherFeatures");
  }
  absl::StatusOr<Admission::Reservation> reserved =
      !within.ok() ? within
                   : admission_.Reserve(
                          ClientKey(context),
                          Bytes(kAnswerCopies * engine::GatherCost(local_, *items, *dtype).bytes +
                                2.0 * static_cast<double>(request->ByteSizeLong())),
                          "this GatherFeatures", internal::CallDeadline(context));
  absl::StatusOr<std::vector<engine::FeatureBlock>> blocks =
      !reserved.ok() ? reserved.status()
      : request->any_part() && request->table() != 0
          ? absl::InvalidArgumentError("GatherFeatures: any_part is not served for layer tables")
      : request->any_part()
          ? engine::GatherRowsOfAnyPart(local_, peers_, *items, *dtype,
                                        [&context] { return context.IsCancelled(); })
      : request->table() != 0 ? tables_.Gather(request->table(), *items, *dtype)
                              : local_.GatherFeatures(*items, *dtype);
  timer.set_ok(blocks.ok());
  if (!blocks.ok()) return rpc::ToGrpcStatus(blocks.status());
  int64_t rows = 0, row_bytes = 0;
  for (const engine::FeatureBlock& b : *blocks) {
    rows += std::ssize(b.labels);
    row_bytes += std::ssize(b.labels) * b.feat_dim * common::FeatureBytes(*dtype);
  }
  stats_.AddGatheredRows(rows, row_bytes);
  std::unique_ptr<shm::ShmSegment> segment;
  if (same_host) {
    auto made = shm::ShmSegment::Create(
        shm::TaggedSegmentName(absl::StrCat(options_.shm_prefix, shm_counter_++),
                               request->shm_key()),
        ShmBytes(*blocks));
    if (made.ok()) segment = *std::move(made);  // else: inline
  }
  ToProto(*blocks, segment.get(), response);
  // The asker unlinks the name when it opens it; one that never does leaves nothing behind.
  if (segment != nullptr) deferred_unlinks_.Add({segment->name()});
  const int64_t shm_bytes = segment != nullptr ? static_cast<int64_t>(segment->size()) : 0;
  stats_.AddBytesSent(static_cast<int64_t>(response->ByteSizeLong()) + shm_bytes);
  stats_.AddShmBytes(shm_bytes);
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::SampleMinibatch(grpc::ServerContext* context,
                                                   const v1::SampleMinibatchRequest* request,
                                                   v1::Minibatch* response) {
  CallTimer timer(stats_, "SampleMinibatch");
  try {
    absl::StatusOr<engine::MinibatchRequest> req = FromProto(*request);
    absl::StatusOr<engine::RequestCost> cost =
        req.ok() ? engine::BatchCost(local_, req->seed_type, std::ssize(req->seeds), req->sampling)
                 : req.status();
    // The budget per request first (the clearer message), then memory.
    if (cost.ok()) {
      const std::string what = absl::StrCat("a minibatch of ", req->seeds.size(), " seeds");
      absl::Status within = engine::CheckCost(*cost, local_.limits(), what);
      if (within.ok()) within = engine::CheckAnswer(*cost, options_.max_answer_bytes, what);
      if (!within.ok()) cost = within;
    }
    absl::StatusOr<Admission::Reservation> reserved =
        !cost.ok() ? cost.status()
                   : admission_.Reserve(ClientKey(*context),
                                        Bytes(kAnswerCopies * cost->bytes +
                                              2.0 * static_cast<double>(request->ByteSizeLong())),
                                        "this SampleMinibatch", internal::CallDeadline(*context));
    if (reserved.ok()) req->cancelled = [context] { return context->IsCancelled(); };
    absl::StatusOr<engine::Minibatch> batch =
        reserved.ok() ? engine::BuildMinibatch(local_, peers_, *req) : reserved.status();
    timer.set_ok(batch.ok());
    if (!batch.ok()) return rpc::ToGrpcStatus(batch.status());
    ToProto(*batch, response);
    stats_.RecordBatchBuild(batch->profile);
    stats_.AddBatch();
    stats_.AddSampledEdges(batch->NumSampledEdges());
    stats_.AddBytesSent(batch->PayloadBytes());
  } catch (const std::bad_alloc&) {
    timer.set_ok(false);
    return OutOfMemory("building a minibatch");
  }
  return grpc::Status::OK;
}

bool PartitionServiceImpl::SameHost(const std::string& host_id, const std::string& proof) const {
  return options_.shared_memory && options_.host_proof != nullptr && !host_id.empty() &&
         host_id == options_.host_id && options_.host_proof->Verify(proof);
}

ShmBatchWriter::Options PartitionServiceImpl::WriterOptions(
    const v1::StreamBatchesRequest& request) {
  // Segments are named for the client's key (shm::TaggedSegmentName): without one, inline.
  return {.shared_memory = SameHost(request.client_host_id(), request.client_host_proof()) &&
                           request.shm_ring_key().size() >= shm::kMinShmKeyBytes,
          .ring_batches = request.shm_ring(),
          .ring_id = request.shm_ring_id(),
          .deferred = &deferred_unlinks_,
          .ring_key = request.shm_ring_key(),
          .rings = &rings_,
          .shm_prefix = options_.shm_prefix,
          .shm_counter = &shm_counter_,
          .stats = &stats_};
}

grpc::Status PartitionServiceImpl::PutRows(grpc::ServerContext*, const v1::PutRowsRequest* request,
                                           v1::PutRowsResponse* response) {
  CallTimer timer(stats_, "PutRows");
  absl::StatusOr<std::vector<int64_t>> ids = FromBytes<int64_t>(request->ids(), "ids");
  absl::StatusOr<std::vector<float>> rows = FromBytes<float>(request->rows(), "rows");
  absl::StatusOr<int64_t> missing =
      !ids.ok()    ? ids.status()
      : !rows.ok() ? rows.status()
                   : tables_.Put(request->table(), request->node_type(), request->dim(), *ids,
                                 *rows);
  timer.set_ok(missing.ok());
  if (!missing.ok()) return rpc::ToGrpcStatus(missing.status());
  response->set_rows_missing(*missing);
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::DropTable(grpc::ServerContext*,
                                             const v1::DropTableRequest* request,
                                             v1::DropTableResponse*) {
  CallTimer timer(stats_, "DropTable");
  tables_.Drop(request->table());
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::GetOrigIds(grpc::ServerContext*,
                                              const v1::GetSplitRequest* request,
                                              v1::GetSplitResponse* response) {
  CallTimer timer(stats_, "GetOrigIds");
  const int t = request->node_type().empty() ? local_.target_type()
                                             : local_.NodeTypeIndex(request->node_type());
  if (t < 0) {
    timer.set_ok(false);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("unknown node type '", request->node_type(), "'"));
  }
  response->set_ids(ToBytes<int64_t>(local_.node_types()[static_cast<size_t>(t)].shard->orig_ids));
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::GetStats(grpc::ServerContext*, const v1::GetStatsRequest*,
                                            v1::Stats* response) {
  stats_.Fill(response);
  return grpc::Status::OK;
}

}  // namespace graphshard::server
