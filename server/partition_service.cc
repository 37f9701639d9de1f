#include "server/partition_service.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "shm/ring.h"
#include "common/status_macros.h"
#include "server/engine/epoch_stream.h"
#include "server/engine/minibatch_builder.h"
#include "server/proto_convert.h"

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

// A streamed batch converted for the wire on its builder thread (the stream's finisher), so the
// stream's writer only sends. Owns its shared-memory segment until Release(): a batch that is
// never sent (stream cancelled, client gone) unlinks it.
struct PackedBatch {
  v1::Minibatch msg;
  std::string segment;  // "" = arrays inline
  // A ring segment, held until sent: one dropped unsent goes back to its ring (ShmRing).
  std::shared_ptr<shm::ShmSegment> ring_segment;
  int64_t sampled_edges = 0;
  int64_t payload_bytes = 0;
  PackedBatch() = default;
  PackedBatch(const PackedBatch&) = delete;
  PackedBatch& operator=(const PackedBatch&) = delete;
  ~PackedBatch() {
    if (!segment.empty()) shm::UnlinkShm(segment);
  }
  std::string Release() { return std::exchange(segment, std::string()); }
};

// The shared-memory segment of a streamed batch, made before its feature rows are gathered (the
// stream's FeaturePlacer) so the rows are written once, where the trainer reads them. Held in
// Minibatch::attachment until the finisher packs the rest of the batch into it; unlinked if the
// batch is dropped before that. Without shared memory (creation failed) the rows go to `heap`.
struct BatchSegment {
  std::shared_ptr<shm::ShmSegment> segment;
  bool ring = false;  // a segment of the stream's ShmRing (which unlinks it), not a one-shot one
  std::vector<char> heap;
  BatchSegment() = default;
  BatchSegment(const BatchSegment&) = delete;
  BatchSegment& operator=(const BatchSegment&) = delete;
  ~BatchSegment() {
    if (segment != nullptr && !ring) shm::UnlinkShm(segment->name());
  }
};

}  // namespace

grpc::Status PartitionServiceImpl::GetMetadata(grpc::ServerContext*, const v1::GetMetadataRequest*,
                                               v1::Metadata* response) {
  CallTimer timer(stats_, "GetMetadata");
  const common::Manifest& m = local_.part().manifest();
  response->set_part(local_.part_index());
  response->set_num_parts(m.num_parts);
  response->set_host_id(options_.host_id);
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
  if (!result.ok()) return ToGrpcStatus(result.status());
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
      !items.ok() ? items.status()
      : !dtype.ok() ? dtype.status()
                    : local_.GatherFeatures(*items, *dtype);
  timer.set_ok(blocks.ok());
  if (!blocks.ok()) return ToGrpcStatus(blocks.status());
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
  if (!batch.ok()) return ToGrpcStatus(batch.status());
  ToProto(*batch, response);
  stats_.AddBatch();
  stats_.AddSampledEdges(batch->NumSampledEdges());
  stats_.AddBytesSent(batch->PayloadBytes());
  return grpc::Status::OK;
}

absl::StatusOr<std::vector<absl::Span<char>>> PartitionServiceImpl::PlaceFeatures(
    engine::Minibatch& batch, const std::vector<size_t>& feature_bytes, shm::ShmRing* ring) {
  auto placement = std::make_shared<BatchSegment>();
  std::vector<absl::Span<char>> spans;
  const size_t segment_bytes = ShmBytes(batch, &feature_bytes);
  absl::StatusOr<std::shared_ptr<shm::ShmSegment>> segment;
  if (ring != nullptr) {
    bool reused = false;
    segment = ring->Acquire(segment_bytes, &reused);
    placement->ring = true;
    if (segment.ok()) stats_.AddShmSegment(reused);
  } else {
    segment = shm::ShmSegment::Create(absl::StrCat(options_.shm_prefix, shm_counter_++),
                                         segment_bytes);
    if (segment.ok()) stats_.AddShmSegment(false);
  }
  if (segment.ok()) {
    placement->segment = *std::move(segment);
    const std::vector<size_t> offsets = ShmFeatureOffsets(feature_bytes);
    for (size_t t = 0; t < feature_bytes.size(); ++t) {
      spans.emplace_back(placement->segment->data() + offsets[t], feature_bytes[t]);
    }
  } else {
    // No shared memory (e.g. /dev/shm full): gather into the heap; Pack falls back to inline.
    std::fprintf(stderr, "graphshard-server: %s; gathering the batch into the heap\n",
                 std::string(segment.status().message()).c_str());
    size_t total = 0;
    for (size_t bytes : feature_bytes) total += bytes;
    placement->heap.resize(total);
    size_t offset = 0;
    for (size_t bytes : feature_bytes) {
      spans.emplace_back(placement->heap.data() + offset, bytes);
      offset += bytes;
    }
  }
  batch.attachment = std::move(placement);
  return spans;
}

std::string PartitionServiceImpl::Pack(const engine::Minibatch& batch, bool shm,
                                       v1::Minibatch* msg) {
  if (shm) {
    std::string name = absl::StrCat(options_.shm_prefix, shm_counter_++);
    auto segment = shm::ShmSegment::Create(name, ShmBytes(batch));
    if (segment.ok()) {
      stats_.AddShmSegment(false);
      ToProto(batch, **segment, msg);
      stats_.AddShmBytes(batch.PayloadBytes());
      return name;
    }
    // No shared memory (e.g. /dev/shm full): fall back to bytes over gRPC for this batch.
    std::fprintf(stderr, "graphshard-server: %s; sending the batch inline\n",
                 std::string(segment.status().message()).c_str());
  }
  ToProto(batch, msg);
  return "";
}

grpc::Status PartitionServiceImpl::StreamBatches(grpc::ServerContext* context,
                                                 const v1::StreamBatchesRequest* request,
                                                 grpc::ServerWriter<v1::Minibatch>* writer) {
  CallTimer timer(stats_, "StreamBatches");
  {
    absl::MutexLock lock(&mu_);
    if (open_streams_ >= options_.max_streams) {
      timer.set_ok(false);
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat(open_streams_, " streams are open (limit ",
                                       options_.max_streams, "); retry later"));
    }
    ++open_streams_;
  }
  stats_.StreamOpened();
  absl::Cleanup close = [this] {
    absl::MutexLock lock(&mu_);
    --open_streams_;
    stats_.StreamClosed();
  };
  absl::StatusOr<engine::StreamRequest> req = FromProto(*request);
  if (!req.ok()) {
    timer.set_ok(false);
    return ToGrpcStatus(req.status());
  }
  const bool shm = options_.shared_memory && !request->client_host_id().empty() &&
                   request->client_host_id() == options_.host_id;
  // Packing (a copy of every array into the segment or the message) runs on the builder
  // threads, up to `prefetch` batches at once, instead of serially on this writer thread.
  engine::EpochStream::Hooks hooks;
  // A client that reads ring segments gets its batches in reused segments (common/shm.h), from
  // the ring its previous stream used when it names its reader (ring_registry.h).
  std::shared_ptr<shm::ShmRing> ring;
  const uint64_t ring_id = request->shm_ring_id();
  bool ring_failed = false;  // set once a batch was sent, cleared when the stream completes
  if (shm && request->shm_ring() > 0) ring = rings_.Acquire(ring_id);
  absl::Cleanup release_ring = [this, &ring, ring_id, &ring_failed] {
    if (ring != nullptr) rings_.Release(ring_id, ring, ring_failed);
  };
  if (shm) hooks.place_features = [this, ring](engine::Minibatch& batch,
                                               const std::vector<size_t>& feature_bytes) {
    return PlaceFeatures(batch, feature_bytes, ring.get());
  };
  hooks.finish = [this, shm](engine::Minibatch& built) {
    auto packed = std::make_shared<PackedBatch>();
    packed->sampled_edges = built.NumSampledEdges();
    packed->payload_bytes = built.PayloadBytes();
    auto placed = std::static_pointer_cast<BatchSegment>(built.attachment);
    if (placed != nullptr && placed->segment != nullptr) {
      ToProto(built, *placed->segment, &packed->msg);
      stats_.AddShmBytes(packed->payload_bytes);  // not the segment's size (a ring's may be larger)
      if (placed->ring) {
        packed->msg.set_shm_ring(true);  // the ring unlinks it if the client never opens it
        packed->ring_segment = placed->segment;
      } else {
        packed->segment = placed->segment->name();  // the name now belongs to `packed`
      }
      placed->segment.reset();
    } else {
      packed->segment = Pack(built, shm, &packed->msg);
    }
    engine::Minibatch light;  // the arrays are in the message or the segment now: free them
    light.batch_size = built.batch_size;
    light.attachment = std::move(packed);
    built = std::move(light);
  };
  hooks.built = [this](const engine::BuildProfile& p) { stats_.AddBuildProfile(p); };
  auto stream = engine::EpochStream::Start(local_, peers_, executor_, *std::move(req),
                                           options_.prefetch, std::move(hooks));
  if (!stream.ok()) {
    timer.set_ok(false);
    return ToGrpcStatus(stream.status());
  }
  std::vector<std::string> segments;  // unlinked here if the client goes away
  absl::Cleanup unlink_on_failure = [&segments, &timer] {
    for (const std::string& name : segments) shm::UnlinkShm(name);
    timer.set_ok(false);
  };
  while (!context->IsCancelled()) {
    const int64_t epoch = (*stream)->next_epoch();
    const int64_t index = (*stream)->next_index();
    const absl::Time wait_start = absl::Now();
    absl::StatusOr<std::optional<engine::Minibatch>> next = (*stream)->Next();
    const absl::Time built = absl::Now();
    if (!next.ok()) return ToGrpcStatus(next.status());
    if (!next->has_value()) {
      std::move(unlink_on_failure).Cancel();
      ring_failed = false;
      return grpc::Status::OK;
    }
    std::shared_ptr<PackedBatch> packed = std::static_pointer_cast<PackedBatch>((**next).attachment);
    next->reset();
    v1::Minibatch& msg = packed->msg;
    msg.set_epoch(epoch);
    msg.set_batch_index(index);
    std::string segment = packed->Release();
    if (!segment.empty()) segments.push_back(segment);
    if (ring != nullptr && msg.shm_ring()) {
      // Back-pressure of the ring: at most shm_ring batches unreleased by the client. A client
      // that has opened every batch sent and still holds shm_ring may be waiting for this one
      // (it holds more than it announced): after 1 s it gets it anyway. One with batches it has
      // not opened yet is behind or pausing (a trainer evaluating between the epochs of its
      // stream): it is waited for as long as the stream lasts.
      absl::Time give_up = absl::Now() + absl::Seconds(1);
      while (!context->IsCancelled()) {
        const shm::ShmRing::ReaderHold hold = ring->HeldByReader();
        if (hold.held < request->shm_ring()) break;
        if (hold.unopened > 0) {
          give_up = absl::Now() + absl::Seconds(1);
          absl::SleepFor(absl::Milliseconds(1));
          continue;
        }
        if (absl::Now() >= give_up) {
          stats_.AddShmRingStall();
          break;
        }
        absl::SleepFor(absl::Microseconds(200));
      }
      ring->MarkSent(msg.shm_name());
      packed->ring_segment.reset();
      msg.set_shm_ring_serial(ring->serial());
      ring_failed = true;  // until the stream completes: the client may not open every one
    }
    stats_.AddBatch();
    stats_.AddSampledEdges(packed->sampled_edges);
    stats_.AddBytesSent(packed->payload_bytes);
    const absl::Time write_start = absl::Now();
    const bool written = writer->Write(msg);
    stats_.AddWriterTimes(absl::ToDoubleSeconds(built - wait_start),
                          absl::ToDoubleSeconds(write_start - built),
                          absl::ToDoubleSeconds(absl::Now() - write_start));
    if (!written) break;
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
}

grpc::Status PartitionServiceImpl::GetStats(grpc::ServerContext*, const v1::GetStatsRequest*,
                                            v1::Stats* response) {
  stats_.Fill(response);
  return grpc::Status::OK;
}

}  // namespace graphshard::server
