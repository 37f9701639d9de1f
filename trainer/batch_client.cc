#include "trainer/batch_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <random>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/bytes.h"
#include "common/status_macros.h"
#include "proto/graphshard.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/health.h"
#include "rpc/status.h"
#include "shm/ring.h"
#include "trainer/internal/wire.h"

namespace graphshard::trainer {
namespace {

absl::Status FromGrpc(const grpc::Status& s, absl::string_view rpc, absl::string_view address) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(rpc::FromGrpcStatus(s).code(),
                      absl::StrCat(rpc, " to server ", address, ": ", s.error_message()));
}

absl::Status Annotate(const absl::Status& s, absl::string_view rpc, absl::string_view address) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(rpc, " from server ", address, ": ", s.message()));
}

}  // namespace

struct PartitionClient::Impl {
  std::string address;
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PartitionService::Stub> stub;
  // Ring segments stay mapped across this client's streams (StreamBatchesRequest.shm_ring_id).
  std::shared_ptr<shm::ShmRingReader> ring_reader = std::make_shared<shm::ShmRingReader>();
  uint64_t ring_id = 0;

  void SetDeadline(grpc::ClientContext& ctx) const {
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::microseconds(static_cast<int64_t>(options.rpc_timeout_s * 1e6)));
  }
};

PartitionClient::PartitionClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PartitionClient::~PartitionClient() = default;

absl::StatusOr<std::unique_ptr<PartitionClient>> PartitionClient::Create(
    std::string address, const ClientOptions& options) {
  if (address.empty()) return absl::InvalidArgumentError("empty server address");
  auto impl = std::make_unique<Impl>();
  impl->address = std::move(address);
  impl->options = options;
  impl->channel = rpc::MakeChannel(impl->address, options.rpc);
  impl->stub = v1::PartitionService::NewStub(impl->channel);
  std::random_device random;
  while (impl->ring_id == 0) {
    impl->ring_id = (uint64_t{random()} << 32) ^ random();
  }
  return std::unique_ptr<PartitionClient>(new PartitionClient(std::move(impl)));
}

const std::string& PartitionClient::address() const { return impl_->address; }

void PartitionClient::SetRingMapHooks(shm::ShmRingReader::MapHooks hooks) {
  impl_->ring_reader->SetMapHooks(std::move(hooks));
}

absl::Status PartitionClient::WaitUntilServing(absl::Time deadline) {
  std::string last = "no answer yet";
  while (true) {
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("server ", impl_->address, " not SERVING before the deadline: ", last));
    }
    // wait_for_ready: wait for the connection within the deadline, not fail fast.
    const absl::Status status =
        rpc::CheckHealth(impl_->channel, std::min(deadline, now + absl::Seconds(2)),
                         rpc::HealthCheckOptions{.wait_for_ready = true});
    if (status.ok() || absl::IsUnimplemented(status)) {
      return absl::OkStatus();  // SERVING; or no health service, but it answers
    }
    last = absl::StrCat("health check: ", status.message());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

absl::StatusOr<ServerMetadata> PartitionClient::GetMetadata() {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  v1::GetMetadataRequest req;
  v1::Metadata resp;
  RETURN_IF_ERROR(
      FromGrpc(impl_->stub->GetMetadata(&ctx, req, &resp), "GetMetadata", impl_->address));
  auto md = internal::DecodeMetadata(resp);
  if (!md.ok()) return Annotate(md.status(), "GetMetadata", impl_->address);
  return md;
}

absl::StatusOr<std::vector<int64_t>> PartitionClient::GetSplit(absl::string_view split) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(ctx);
  v1::GetSplitRequest req;
  req.set_split(std::string(split));
  v1::GetSplitResponse resp;
  RETURN_IF_ERROR(FromGrpc(impl_->stub->GetSplit(&ctx, req, &resp),
                           absl::StrCat("GetSplit(", split, ")"), impl_->address));
  auto ids = common::FromBytes<int64_t>(resp.ids(), absl::StrCat("split ", split, " ids"),
                                        absl::StatusCode::kDataLoss);
  if (!ids.ok()) return Annotate(ids.status(), "GetSplit", impl_->address);
  return ids;
}

namespace {

class GrpcBatchStream final : public BatchStream {
 public:
  GrpcBatchStream(v1::PartitionService::Stub& stub, const v1::StreamBatchesRequest& request,
                  const ServerMetadata& metadata, std::string address, absl::Duration timeout,
                  std::shared_ptr<shm::ShmRingReader> ring)
      : metadata_(metadata), address_(std::move(address)), ring_(std::move(ring)) {
    ctx_.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    reader_ = stub.StreamBatches(&ctx_, request);
  }
  ~GrpcBatchStream() override {
    if (!finished_) {
      ctx_.TryCancel();
      // Drain what is already here: one-shot segments sent to us are unlinked, ring segments
      // released.
      v1::Minibatch m;
      while (reader_->Read(&m)) {
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
    if (!reader_->Read(m.get())) {
      finished_ = true;
      RETURN_IF_ERROR(FromGrpc(reader_->Finish(), "StreamBatches", address_));
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
    if (!batch.ok()) return Annotate(batch.status(), "StreamBatches", address_);
    return absl::optional<MinibatchData>(*std::move(batch));
  }

 private:
  const ServerMetadata& metadata_;
  std::string address_;
  // The client's (shared by its streams); the batches' leases outlive it (they keep their
  // mapping).
  std::shared_ptr<shm::ShmRingReader> ring_;
  uint64_t attached_ = 0;  // the serial of the ring this stream reads, once seen
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<v1::Minibatch>> reader_;
  bool finished_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BatchStream>> PartitionClient::StreamBatches(
    const StreamOptions& options, const ServerMetadata& metadata) {
  if (options.seeds.empty() || options.batch_size < 1) {
    return absl::InvalidArgumentError("StreamBatches needs seeds and batch_size >= 1");
  }
  const int64_t natural =
      (static_cast<int64_t>(options.seeds.size()) + options.batch_size - 1) / options.batch_size;
  // The deadline allows rpc_timeout_s per batch, and per epoch for the pauses between epochs.
  const int64_t epochs = std::max<int64_t>(1, options.num_epochs);
  const int64_t per_epoch = (options.num_batches > 0 ? options.num_batches : natural) +
                            (epochs > 1 ? options.pause_batches_per_epoch : 0);
  const int64_t batches = per_epoch * epochs - options.first_batch;
  const absl::Duration timeout =
      absl::Seconds(impl_->options.rpc_timeout_s * static_cast<double>(std::max<int64_t>(1, batches + 1)));
  v1::StreamBatchesRequest request = internal::EncodeStreamRequest(options);
  if (request.shm_ring() > 0) request.set_shm_ring_id(impl_->ring_id);
  return std::unique_ptr<BatchStream>(new GrpcBatchStream(
      *impl_->stub, request, metadata, impl_->address, timeout, impl_->ring_reader));
}

}  // namespace graphshard::trainer
