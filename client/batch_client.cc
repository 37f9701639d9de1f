#include "client/batch_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <random>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "client/internal/wire.h"
#include "common/bytes.h"
#include "common/status_macros.h"
#include "proto/graphshard.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/feature_dtype_proto.h"
#include "rpc/health.h"
#include "rpc/security.h"
#include "rpc/status.h"
#include "shm/host_proof.h"
#include "shm/ring.h"

namespace graphshard::client {
namespace {

absl::Status FromGrpc(const grpc::Status& s, absl::string_view rpc, absl::string_view label) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(rpc::FromGrpcStatus(s).code(),
                      absl::StrCat(rpc, " to ", label, ": ", s.error_message()));
}

absl::Status Annotate(const absl::Status& s, absl::string_view rpc, absl::string_view label) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(rpc, " from ", label, ": ", s.message()));
}

// A GatherFeatures request for the rows of `ids` of one node type, in `dtype`.
v1::GatherFeaturesRequest GatherRequest(const std::string& node_type, absl::Span<const int64_t> ids,
                                        FeatureDtype dtype) {
  v1::GatherFeaturesRequest req;
  v1::TypedIds* item = req.add_items();
  item->set_node_type(node_type);
  item->set_ids(common::ToBytes<int64_t>(ids));
  req.set_dtype(rpc::FeatureDtypeToProto(dtype));
  return req;
}

// The hostname in a host id "<boot id>/<hostname>/net:[<inode>]" (shm::HostId); else all of it.
std::string HostOf(const std::string& host_id) {
  std::vector<std::string> parts = absl::StrSplit(host_id, '/');
  return parts.size() >= 3 ? parts[1] : host_id;
}

}  // namespace

struct PartitionClient::Impl {
  std::string address;
  int part = -1;
  ClientOptions options;
  mutable absl::Mutex mu;
  std::string host ABSL_GUARDED_BY(mu);  // from GetMetadata
  // This server's own segment prefix, from its (verified) GetMetadata: its streams' batches
  // may name no other segment ("" before GetMetadata: every shared-memory batch is refused).
  std::string shm_prefix ABSL_GUARDED_BY(mu);
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PartitionService::Stub> stub;
  // Ring segments stay mapped across this client's streams (StreamBatchesRequest.shm_ring_id).
  std::shared_ptr<shm::ShmRingReader> ring_reader = std::make_shared<shm::ShmRingReader>();
  uint64_t ring_id = 0;
  std::string ring_key;  // binds ring_id to this client (StreamBatchesRequest.shm_ring_key)
  // The server's same-host proof: Metadata.host_proof_name from GetMetadata, and what it
  // holds (read at the first stream; "" if unreadable: another host or user).
  std::string host_proof_name ABSL_GUARDED_BY(mu);
  std::string host_proof ABSL_GUARDED_BY(mu);

  void SetDeadline(grpc::ClientContext& ctx) const {
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::microseconds(static_cast<int64_t>(options.rpc_timeout_s * 1e6)));
  }
};

PartitionClient::PartitionClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PartitionClient::~PartitionClient() = default;

absl::StatusOr<std::unique_ptr<PartitionClient>> PartitionClient::Create(
    std::string address, const ClientOptions& options, int part) {
  if (address.empty()) return absl::InvalidArgumentError("empty server address");
  auto impl = std::make_unique<Impl>();
  impl->address = std::move(address);
  impl->part = part;
  impl->options = options;
  impl->channel =
      rpc::MakeChannel(impl->address, rpc::LivenessOptions(options.stall_timeout_s, options.rpc));
  impl->stub = v1::PartitionService::NewStub(impl->channel);
  std::random_device random;
  while (impl->ring_id == 0) {
    impl->ring_id = (uint64_t{random()} << 32) ^ random();
  }
  impl->ring_key.resize(16);
  for (char& c : impl->ring_key) c = static_cast<char>(random() & 0xff);
  return std::unique_ptr<PartitionClient>(new PartitionClient(std::move(impl)));
}

const std::string& PartitionClient::address() const { return impl_->address; }

std::string PartitionClient::Label() const {
  std::string label =
      impl_->part >= 0 ? absl::StrCat("part ", impl_->part, ", server ") : std::string("server ");
  absl::StrAppend(&label, impl_->address);
  absl::MutexLock lock(&impl_->mu);
  if (!impl_->host.empty()) absl::StrAppend(&label, " on host ", impl_->host);
  return label;
}

void PartitionClient::SetRingMapHooks(shm::ShmRingReader::MapHooks hooks) {
  impl_->ring_reader->SetMapHooks(std::move(hooks));
}

absl::Status PartitionClient::CheckServing(absl::Time deadline) {
  const absl::Status status =
      rpc::WithPlaintextHint(rpc::CheckHealth(impl_->channel, deadline), impl_->options.rpc);
  if (status.ok() || absl::IsUnimplemented(status)) return absl::OkStatus();
  return absl::Status(status.code(), absl::StrCat(Label(), ": health check: ", status.message()));
}

absl::StatusOr<ServerMetadata> PartitionClient::GetMetadata() {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  v1::GetMetadataRequest req;
  const std::string& token = impl_->options.rpc.token;
  if (!token.empty()) req.set_nonce(rpc::NewNonce());
  v1::Metadata resp;
  RETURN_IF_ERROR(rpc::WithPlaintextHint(
      FromGrpc(impl_->stub->GetMetadata(&ctx, req, &resp), "GetMetadata", Label()),
      impl_->options.rpc));
  if (!token.empty()) {
    // A registry entry is trusted only once its server proved the job token: nothing of this
    // server (its batches' shared memory above all) is used before (docs/SECURITY.md).
    const absl::Status proof =
        rpc::CheckJobProof(token, req.nonce(), resp.part(), resp.job_proof());
    if (!proof.ok()) return Annotate(proof, "GetMetadata", Label());
  }
  auto md = internal::DecodeMetadata(resp);
  if (!md.ok()) return Annotate(md.status(), "GetMetadata", Label());
  absl::MutexLock lock(&impl_->mu);
  impl_->host = HostOf(md->host_id);
  impl_->shm_prefix = md->shm_prefix;
  if (resp.host_proof_name() != impl_->host_proof_name) {
    impl_->host_proof_name = resp.host_proof_name();  // a restarted server: a new proof
    impl_->host_proof.clear();
  }
  return md;
}

absl::StatusOr<std::vector<int64_t>> PartitionClient::GetSplit(absl::string_view split,
                                                               absl::string_view edge_type) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  v1::GetSplitRequest req;
  req.set_split(std::string(split));
  req.set_edge_type(std::string(edge_type));
  v1::GetSplitResponse resp;
  RETURN_IF_ERROR(FromGrpc(impl_->stub->GetSplit(&ctx, req, &resp),
                           absl::StrCat("GetSplit(", split, ")"), Label()));
  auto ids = common::FromBytes<int64_t>(resp.ids(), absl::StrCat("split ", split, " ids"),
                                        absl::StatusCode::kDataLoss);
  if (!ids.ok()) return Annotate(ids.status(), "GetSplit", Label());
  return ids;
}

absl::StatusOr<std::vector<int64_t>> PartitionClient::GetOrigIds() {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  v1::GetSplitRequest req;
  v1::GetSplitResponse resp;
  RETURN_IF_ERROR(FromGrpc(impl_->stub->GetOrigIds(&ctx, req, &resp), "GetOrigIds", Label()));
  auto ids = common::FromBytes<int64_t>(resp.ids(), "orig ids", absl::StatusCode::kDataLoss);
  if (!ids.ok()) return Annotate(ids.status(), "GetOrigIds", Label());
  return ids;
}

absl::StatusOr<int64_t> PartitionClient::PutRows(uint64_t table, int64_t dim,
                                                 absl::Span<const int64_t> ids,
                                                 absl::Span<const float> rows) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  v1::PutRowsRequest req;
  req.set_table(table);
  req.set_dim(dim);
  req.set_ids(common::ToBytes<int64_t>(ids));
  req.set_rows(common::ToBytes<float>(rows));
  v1::PutRowsResponse resp;
  RETURN_IF_ERROR(FromGrpc(impl_->stub->PutRows(&ctx, req, &resp),
                           absl::StrCat("PutRows(table ", table, ")"), Label()));
  return resp.rows_missing();
}

absl::Status PartitionClient::DropTable(uint64_t table) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  v1::DropTableRequest req;
  req.set_table(table);
  v1::DropTableResponse resp;
  return FromGrpc(impl_->stub->DropTable(&ctx, req, &resp), absl::StrCat("DropTable(", table, ")"),
                  Label());
}

absl::StatusOr<std::string> PartitionClient::GatherRows(const std::string& node_type,
                                                        absl::Span<const int64_t> ids,
                                                        int64_t feat_dim, FeatureDtype dtype,
                                                        const GatherRowsOptions& options) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  v1::GatherFeaturesRequest req = GatherRequest(node_type, ids, dtype);
  req.set_any_part(options.any_part);
  if (!options.client_host_id.empty()) {
    req.set_client_host_id(options.client_host_id);
    req.set_client_host_proof(HostProof());
    req.set_shm_key(impl_->ring_key);
  }
  v1::GatherFeaturesResponse resp;
  const std::string call = absl::StrCat("GatherFeatures(", ids.size(), " '", node_type, "' rows)");
  RETURN_IF_ERROR(FromGrpc(impl_->stub->GatherFeatures(&ctx, req, &resp), call, Label()));
  const int64_t want = std::ssize(ids) * feat_dim * FeatureBytes(dtype);
  const auto malformed = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat(call, " from ", Label(), ": the answer is not ",
                                            ids.size(), " rows of ", feat_dim, " features (",
                                            why, ")"));
  };
  if (resp.items_size() != 1 || resp.items(0).feat_dim() != feat_dim) {
    return malformed("items or width");
  }
  const v1::Array& rows = resp.items(0).features();
  if (resp.shm_name().empty()) {
    if (std::ssize(rows.data()) != want) return malformed("inline size");
    return std::move(*resp.mutable_items(0)->mutable_features()->mutable_data());
  }
  // Shared memory: only a segment this server made for this client (prefix and key), opened
  // once and unlinked.
  std::string prefix;
  {
    absl::MutexLock lock(&impl_->mu);
    prefix = impl_->shm_prefix;
  }
  if (options.client_host_id.empty() || prefix.empty()) return malformed("an unasked segment");
  RETURN_IF_ERROR(Annotate(shm::CheckSegmentName(resp.shm_name(), prefix, impl_->ring_key), call,
                           Label()));
  absl::StatusOr<std::shared_ptr<const shm::ShmSegment>> opened =
      shm::ShmSegment::OpenAndUnlink(resp.shm_name(), resp.shm_size());
  if (!opened.ok()) return Annotate(opened.status(), call, Label());
  const std::shared_ptr<const shm::ShmSegment>& segment = *opened;
  if (static_cast<int64_t>(rows.shm_length()) != want ||
      !common::RangeFits(rows.shm_offset(), rows.shm_length(), segment->size())) {
    return malformed("segment size");
  }
  return std::string(segment->data() + rows.shm_offset(), static_cast<size_t>(want));
}

absl::StatusOr<PartitionClient::InEdges> PartitionClient::AllInEdges(
    const std::string& edge_type, absl::Span<const int64_t> ids) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  v1::SampleOneHopRequest req;
  v1::HopItem* item = req.add_items();
  item->set_edge_type(edge_type);
  item->set_seeds(common::ToBytes<int64_t>(ids));
  item->set_fanout(-1);
  v1::SampleOneHopResponse resp;
  const std::string call = absl::StrCat("SampleOneHop(all in-edges of ", ids.size(), " '",
                                        edge_type, "' nodes)");
  RETURN_IF_ERROR(FromGrpc(impl_->stub->SampleOneHop(&ctx, req, &resp), call, Label()));
  const auto malformed = [&](absl::string_view why) {
    return absl::DataLossError(
        absl::StrCat(call, " from ", Label(), ": a malformed answer (", why, ")"));
  };
  if (resp.items_size() != 1) return malformed("not one item");
  auto counts = common::FromBytes<int64_t>(resp.items(0).counts(), "counts",
                                           absl::StatusCode::kDataLoss);
  auto neighbors = common::FromBytes<int64_t>(resp.items(0).neighbors(), "neighbors",
                                              absl::StatusCode::kDataLoss);
  if (!counts.ok()) return malformed(counts.status().message());
  if (!neighbors.ok()) return malformed(neighbors.status().message());
  if (counts->size() != ids.size()) return malformed("not one count per node");
  int64_t sum = 0;
  for (int64_t c : *counts) {
    if (c < 0 || c > std::ssize(*neighbors) - sum) return malformed("counts past the neighbours");
    sum += c;
  }
  if (sum != std::ssize(*neighbors)) return malformed("counts short of the neighbours");
  return InEdges{*std::move(counts), *std::move(neighbors)};
}

absl::StatusOr<std::vector<int64_t>> PartitionClient::GatherLabels(const std::string& node_type,
                                                                   absl::Span<const int64_t> ids) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  const v1::GatherFeaturesRequest req = GatherRequest(node_type, ids, FeatureDtype::kFloat16);
  v1::GatherFeaturesResponse resp;
  const std::string call = absl::StrCat("GatherFeatures(labels of ", ids.size(), " '",
                                        node_type, "' nodes)");
  RETURN_IF_ERROR(FromGrpc(impl_->stub->GatherFeatures(&ctx, req, &resp), call, Label()));
  if (resp.items_size() != 1) {
    return absl::DataLossError(absl::StrCat(call, " from ", Label(), ": not one item"));
  }
  auto labels = common::FromBytes<int64_t>(resp.items(0).labels(), "labels",
                                           absl::StatusCode::kDataLoss);
  if (!labels.ok()) return Annotate(labels.status(), call, Label());
  if (labels->size() != ids.size()) {
    return absl::DataLossError(absl::StrCat(call, " from ", Label(), ": ", labels->size(),
                                            " labels for ", ids.size(), " nodes"));
  }
  return labels;
}

std::string PartitionClient::HostProof() {
  bool named = false;
  {
    absl::MutexLock lock(&impl_->mu);
    named = !impl_->host_proof_name.empty();
  }
  if (!named) GetMetadata().status().IgnoreError();  // learns the name
  absl::MutexLock lock(&impl_->mu);
  if (impl_->host_proof.empty() && !impl_->host_proof_name.empty()) {
    impl_->host_proof = shm::ReadHostProof(impl_->host_proof_name).value_or("");
  }
  return impl_->host_proof;
}

namespace {

// Cancels a call whose caller has waited longer than `timeout` for its next message (Arm()
// before the blocking read, Disarm() after): the per-message deadline of a stream. One thread per
// watched stream, asleep unless armed.
class StallWatch {
 public:
  StallWatch(grpc::ClientContext& ctx, absl::Duration timeout)
      : ctx_(ctx), timeout_(timeout), thread_([this] { Run(); }) {}
  ~StallWatch() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }
  void Arm() {
    absl::MutexLock lock(&mu_);
    armed_at_ = absl::Now();
  }
  void Disarm() {
    absl::MutexLock lock(&mu_);
    armed_at_ = absl::InfiniteFuture();
  }
  // True once the watch has cancelled the call.
  bool fired() {
    absl::MutexLock lock(&mu_);
    return fired_;
  }

 private:
  void Run() {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      const absl::Time due = armed_at_ + timeout_;
      if (absl::Now() >= due) {
        fired_ = true;
        armed_at_ = absl::InfiniteFuture();
        ctx_.TryCancel();
        continue;
      }
      // Woken when armed, disarmed or stopped, or at the deadline.
      const absl::Time seen = armed_at_;
      auto changed = [this, seen]()
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || armed_at_ != seen; };
      mu_.AwaitWithDeadline(absl::Condition(&changed), due);
    }
  }

  grpc::ClientContext& ctx_;
  const absl::Duration timeout_;
  absl::Mutex mu_;
  absl::Time armed_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool fired_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the members above are set
};

class GrpcBatchStream final : public BatchStream {
 public:
  GrpcBatchStream(v1::PartitionService::Stub& stub, const v1::StreamBatchesRequest& request,
                  const ServerMetadata& metadata, std::string label, absl::Duration stall_timeout,
                  std::shared_ptr<shm::ShmRingReader> ring)
      : metadata_(metadata),
        label_(std::move(label)),
        stall_timeout_(stall_timeout),
        ring_(std::move(ring)) {
    reader_ = stub.StreamBatches(&ctx_, request);
  }
  ~GrpcBatchStream() override {
    if (!finished_) {
      ctx_.TryCancel();
      // Drain what is already here: one-shot segments sent to us are unlinked, ring segments
      // released.
      v1::Minibatch m;
      while (reader_->Read(&m)) {
        if (!m.shm_name().empty() &&
            !shm::CheckSegmentName(m.shm_name(), metadata_.shm_prefix, metadata_.shm_key).ok()) {
          continue;  // not made for this client by this server: left alone
        }
        if (!m.shm_name().empty() && m.shm_ring()) {
          ring_->Open(m.shm_name(), m.shm_size(), m.shm_ring_serial()).IgnoreError();
        } else if (!m.shm_name().empty()) {
          shm::UnlinkShm(m.shm_name());
        }
      }
      reader_->Finish().ok();
    }
    if (attached_ != 0) ring_->Detach(attached_);
  }

  void Cancel() override { ctx_.TryCancel(); }

  absl::StatusOr<absl::optional<MinibatchData>> Next() override {
    if (finished_) return absl::optional<MinibatchData>();
    auto m = std::make_shared<v1::Minibatch>();
    watch_.Arm();
    const bool read = reader_->Read(m.get());
    watch_.Disarm();
    if (!read) {
      finished_ = true;
      const grpc::Status status = reader_->Finish();
      if (watch_.fired()) {
        return absl::DeadlineExceededError(
            absl::StrCat("StreamBatches to ", label_, ": stalled: no batch for ",
                         absl::FormatDuration(stall_timeout_), " (--stall-timeout-s)"));
      }
      RETURN_IF_ERROR(FromGrpc(status, "StreamBatches", label_));
      return absl::optional<MinibatchData>();
    }
    if (m->shm_ring() && m->shm_ring_serial() != attached_) {
      // The ring this stream reads (the same for all its batches).
      ring_->Attach(m->shm_ring_serial());
      if (attached_ != 0) ring_->Detach(attached_);
      attached_ = m->shm_ring_serial();
    }
    absl::StatusOr<MinibatchData> batch =
        internal::DecodeMinibatch(std::move(m), metadata_, ring_.get());
    if (!batch.ok()) return Annotate(batch.status(), "StreamBatches", label_);
    return absl::optional<MinibatchData>(*std::move(batch));
  }

 private:
  const ServerMetadata metadata_;  // a copy: with this server's own shm_prefix
  std::string label_;
  const absl::Duration stall_timeout_;
  // The client's (shared by its streams); the batches' leases outlive it (they keep their
  // mapping).
  std::shared_ptr<shm::ShmRingReader> ring_;
  uint64_t attached_ = 0;  // the serial of the ring this stream reads, once seen
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<v1::Minibatch>> reader_;
  StallWatch watch_{ctx_, stall_timeout_};
  bool finished_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BatchStream>> PartitionClient::StreamBatches(
    const StreamOptions& options, const ServerMetadata& metadata) {
  if (options.seeds.empty() || options.batch_size < 1) {
    return absl::InvalidArgumentError("StreamBatches needs seeds and batch_size >= 1");
  }
  v1::StreamBatchesRequest request = internal::EncodeStreamRequest(options);
  // The key also names one-shot segments: a same-host server sends shared memory only with it.
  request.set_shm_ring_key(impl_->ring_key);
  if (request.shm_ring() > 0) request.set_shm_ring_id(impl_->ring_id);
  if (!request.client_host_id().empty()) {
    // Shared memory only for a client that proves it is on the server's host: the proof named
    // in the server's GetMetadata (read once per name).
    request.set_client_host_proof(HostProof());
  }
  // `metadata` describes the graph (often part 0's); the segments are this server's.
  ServerMetadata own = metadata;
  {
    absl::MutexLock lock(&impl_->mu);
    own.shm_prefix = impl_->shm_prefix;
  }
  own.shm_key = impl_->ring_key;
  return std::unique_ptr<BatchStream>(
      new GrpcBatchStream(*impl_->stub, request, own, Label(),
                          absl::Seconds(impl_->options.stall_timeout_s), impl_->ring_reader));
}

}  // namespace graphshard::client
