#include "server/partition_service.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "rpc/status.h"
#include "server/engine/epoch_stream.h"
#include "server/engine/minibatch_builder.h"
#include "server/proto_convert.h"
#include "server/shm_batch_writer.h"
#include "shm/ring.h"

namespace graphshard::server {
namespace {

absl::StatusOr<engine::StreamRequest> FromProto(const v1::StreamBatchesRequest& p) {
  engine::StreamRequest r;
  r.seed_type = p.seed_type();
  ASSIGN_OR_RETURN(r.seeds, FromBytes<int64_t>(p.seeds(), "seeds"));
  r.batch_size = p.batch_size();
  r.shuffle = p.shuffle();
  r.shuffle_seed = p.shuffle_seed();
  r.epoch = p.epoch();
  r.first_batch = p.first_batch();
  r.num_batches = p.num_batches();
  r.num_epochs = p.num_epochs() == 0 ? 1 : p.num_epochs();
  ASSIGN_OR_RETURN(r.sampling, server::FromProto(p.sampling()));
  return r;
}

}  // namespace

grpc::Status PartitionServiceImpl::GetMetadata(grpc::ServerContext*, const v1::GetMetadataRequest*,
                                               v1::Metadata* response) {
  CallTimer timer(stats_, "GetMetadata");
  const common::Manifest& m = local_.part().manifest();
  response->set_part(local_.part_index());
  response->set_num_parts(m.num_parts);
  response->set_host_id(options_.host_id);
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

grpc::Status PartitionServiceImpl::SampleOneHop(grpc::ServerContext*,
                                                const v1::SampleOneHopRequest* request,
                                                v1::SampleOneHopResponse* response) {
  CallTimer timer(stats_, "SampleOneHop");
  absl::StatusOr<engine::OneHopRequest> req = FromProto(*request);
  absl::StatusOr<std::vector<engine::HopResult>> result =
      req.ok() ? local_.SampleOneHop(*req) : req.status();
  timer.set_ok(result.ok());
  if (!result.ok()) return rpc::ToGrpcStatus(result.status());
  ToProto(*result, response);
  stats_.AddBytesSent(static_cast<int64_t>(response->ByteSizeLong()));
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::GatherFeatures(grpc::ServerContext*,
                                                  const v1::GatherFeaturesRequest* request,
                                                  v1::GatherFeaturesResponse* response) {
  CallTimer timer(stats_, "GatherFeatures");
  absl::StatusOr<std::vector<engine::TypedIds>> items = FromProto(*request);
  absl::StatusOr<engine::FeatureDtype> dtype = FromProto(request->dtype());
  absl::StatusOr<std::vector<engine::FeatureBlock>> blocks =
      !items.ok()               ? items.status()
      : !dtype.ok()             ? dtype.status()
      : request->table() != 0 ? tables_.Gather(request->table(), *items, *dtype)
                                : local_.GatherFeatures(*items, *dtype);
  timer.set_ok(blocks.ok());
  if (!blocks.ok()) return rpc::ToGrpcStatus(blocks.status());
  std::unique_ptr<shm::ShmSegment> segment;
  if (options_.shared_memory && !request->client_host_id().empty() &&
      request->client_host_id() == options_.host_id) {
    auto made = shm::ShmSegment::Create(absl::StrCat(options_.shm_prefix, shm_counter_++),
                                           ShmBytes(*blocks));
    if (made.ok()) segment = *std::move(made);  // else: inline
  }
  ToProto(*blocks, segment.get(), response);
  const int64_t shm_bytes = segment != nullptr ? static_cast<int64_t>(segment->size()) : 0;
  stats_.AddBytesSent(static_cast<int64_t>(response->ByteSizeLong()) + shm_bytes);
  stats_.AddShmBytes(shm_bytes);
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::SampleMinibatch(grpc::ServerContext*,
                                                   const v1::SampleMinibatchRequest* request,
                                                   v1::Minibatch* response) {
  CallTimer timer(stats_, "SampleMinibatch");
  absl::StatusOr<engine::MinibatchRequest> req = FromProto(*request);
  absl::StatusOr<engine::Minibatch> batch =
      req.ok() ? engine::BuildMinibatch(local_, peers_, *req) : req.status();
  timer.set_ok(batch.ok());
  if (!batch.ok()) return rpc::ToGrpcStatus(batch.status());
  ToProto(*batch, response);
  stats_.RecordBatchBuild(
      absl::Seconds(batch->profile.sample.wall_s + batch->profile.gather.wall_s));
  stats_.AddBatch();
  stats_.AddSampledEdges(batch->NumSampledEdges());
  stats_.AddBytesSent(batch->PayloadBytes());
  return grpc::Status::OK;
}

grpc::Status PartitionServiceImpl::StreamBatches(grpc::ServerContext* context,
                                                 const v1::StreamBatchesRequest* request,
                                                 grpc::ServerWriter<v1::Minibatch>* writer) {
  CallTimer timer(stats_, "StreamBatches");
  if (absl::Status admitted = OpenStream(); !admitted.ok()) {
    timer.set_ok(false);
    return rpc::ToGrpcStatus(admitted);
  }
  absl::Cleanup close = [this] { CloseStream(); };
  absl::StatusOr<engine::StreamRequest> req = FromProto(*request);
  if (!req.ok()) {
    timer.set_ok(false);
    return rpc::ToGrpcStatus(req.status());
  }
  ShmBatchWriter batches(WriterOptions(*request));  // before the stream, which goes first
  // A layer table's stream reads a view of the part with the table's rows, and asks peers for
  // their rows of the table; its jobs keep both alive (the hooks), as they may outlive it.
  const engine::LocalPart* local = &local_;
  engine::Peers* peers = &peers_;
  engine::EpochStream::Hooks hooks = batches.StreamHooks();
  if (request->table() != 0) {
    absl::StatusOr<std::shared_ptr<const engine::LocalPart>> view = tables_.View(request->table());
    if (!view.ok()) {
      timer.set_ok(false);
      return rpc::ToGrpcStatus(view.status());
    }
    auto table_peers = std::make_shared<engine::TablePeers>(peers_, request->table());
    local = view->get();
    peers = table_peers.get();
    hooks.built = [built = std::move(hooks.built), keep = *view,
                   table_peers](const engine::BuildProfile& p) {
      (void)keep, (void)table_peers;
      if (built) built(p);
    };
  }
  auto stream = engine::EpochStream::Start(*local, *peers, executor_, *std::move(req),
                                           options_.prefetch, std::move(hooks));
  if (!stream.ok()) {
    timer.set_ok(false);
    return rpc::ToGrpcStatus(stream.status());
  }
  const auto cancelled = [context] { return context->IsCancelled(); };
  while (!cancelled()) {
    absl::StatusOr<std::optional<ShmBatchWriter::Batch>> next = batches.Next(**stream, cancelled);
    if (!next.ok()) {
      timer.set_ok(false);
      return rpc::ToGrpcStatus(next.status());
    }
    if (!next->has_value()) return grpc::Status::OK;
    const absl::Time write_start = absl::Now();
    const bool written = writer->Write((*next)->msg);
    stats_.AddWriterTimes(absl::ToDoubleSeconds((*next)->wait_build),
                          absl::ToDoubleSeconds((*next)->wait_ring),
                          absl::ToDoubleSeconds(absl::Now() - write_start));
    if (!written) break;
  }
  timer.set_ok(false);
  return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
}

ShmBatchWriter::Options PartitionServiceImpl::WriterOptions(
    const v1::StreamBatchesRequest& request) {
  return {.shared_memory = options_.shared_memory && !request.client_host_id().empty() &&
                           request.client_host_id() == options_.host_id,
          .ring_batches = request.shm_ring(),
          .ring_id = request.shm_ring_id(),
          .rings = &rings_,
          .shm_prefix = options_.shm_prefix,
          .shm_counter = &shm_counter_,
          .stats = &stats_};
}

absl::Status PartitionServiceImpl::OpenStream() {
  absl::MutexLock lock(&mu_);
  if (open_streams_ >= options_.max_streams) {
    return absl::ResourceExhaustedError(absl::StrCat(open_streams_, " streams are open (limit ",
                                                     options_.max_streams, "); retry later"));
  }
  ++open_streams_;
  stats_.StreamOpened();
  return absl::OkStatus();
}

void PartitionServiceImpl::CloseStream() {
  absl::MutexLock lock(&mu_);
  --open_streams_;
  stats_.StreamClosed();
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
