// PartitionServiceImpl::StreamBatches: admits the stream, then RunStream checks the request,
// opens what the stream reads (the part, or a layer table), reserves the memory of the batches
// in flight, starts the epoch stream and sends its batches until the end, an error, or the
// client going away.

#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "rpc/status.h"
#include "server/engine/epoch_stream.h"
#include "server/engine/layer_tables.h"
#include "server/engine/request_cost.h"
#include "server/internal/service_calls.h"
#include "server/partition_service.h"
#include "server/proto_convert.h"
#include "server/shm_batch_writer.h"

namespace graphshard::server {
namespace {

using internal::Bytes;
using internal::ClientKey;
using internal::OutOfMemory;

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
  if (p.has_link() && !p.link().edge_type().empty()) {
    r.link.edge_type = p.link().edge_type();
    r.link.split = p.link().split().empty() ? "train" : p.link().split();
    r.link.neg_ratio = p.link().neg_ratio();
    switch (p.link().neg_sampling()) {
      case v1::NEG_UNIFORM:
        r.link.neg_sampling = engine::NegativeSampling::kUniform;
        break;
      case v1::NEG_DEGREE:
        r.link.neg_sampling = engine::NegativeSampling::kDegree;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("unknown negative sampling ", static_cast<int>(p.link().neg_sampling())));
    }
  }
  return r;
}

// The most ring batches a client may announce (StreamBatchesRequest.shm_ring).
constexpr int kMaxRingBatches = 1024;

// InvalidArgument for a ring of more than kMaxRingBatches batches; a ring id must be one the
// caller may use (RingRegistry::Claim's errors).
absl::Status CheckRing(const v1::StreamBatchesRequest& request, RingRegistry& rings) {
  if (request.shm_ring() < 0 || request.shm_ring() > kMaxRingBatches) {
    return absl::InvalidArgumentError(absl::StrCat("shm_ring ", request.shm_ring(),
                                                   " is outside 0..", kMaxRingBatches));
  }
  if (request.shm_ring_id() != 0) {
    RETURN_IF_ERROR(rings.Claim(request.shm_ring_id(), request.shm_ring_key()));
  }
  return absl::OkStatus();
}

// What a stream over layer table `table` reads (engine::TableSource: a view of the part with
// the table's rows, and `peers` asked for theirs), or null for table 0: the part itself.
// Errors as LayerTables::View.
absl::StatusOr<std::shared_ptr<engine::TableSource>> OpenTable(engine::LayerTables& tables,
                                                               engine::Peers& peers,
                                                               uint64_t table) {
  if (table == 0) return std::shared_ptr<engine::TableSource>();
  ASSIGN_OR_RETURN(std::shared_ptr<const engine::LocalPart> view, tables.View(table));
  return std::make_shared<engine::TableSource>(std::move(view), peers, table);
}

// Memory: each batch in flight may hold its bound (and its packed copy); the stream builds as
// many ahead as the client's and the server's budgets allow, up to `max_prefetch`. The
// reservation is held by `slot`; returns how many batches the stream may build ahead.
// A batch's answer must fit one message where it is sent inline (`max_answer_bytes`; 0 where
// batches go through shared memory), and every batch the per-request budgets: refused before
// any batch is built.
absl::StatusOr<int> ReserveStream(Admission& admission, const std::string& client,
                                  const engine::LocalPart& local, const engine::StreamRequest& req,
                                  int max_prefetch, int64_t max_answer_bytes,
                                  Admission::StreamSlot& slot, absl::Time deadline) {
  const int64_t batch = std::min<int64_t>(req.batch_size, std::ssize(req.seeds));
  ASSIGN_OR_RETURN(
      const engine::RequestCost cost,
      engine::BatchCost(local, req.seed_type, std::max<int64_t>(batch, 1), req.sampling));
  const std::string what = absl::StrCat("a stream of batches of ", batch, " seeds");
  RETURN_IF_ERROR(engine::CheckCost(cost, local.limits(), what));
  RETURN_IF_ERROR(engine::CheckAnswer(cost, max_answer_bytes, what));
  int prefetch = max_prefetch;
  ASSIGN_OR_RETURN(Admission::Reservation reserved,
                   admission.ReserveUpTo(client, Bytes(2 * cost.bytes + 1), max_prefetch,
                                         absl::StrCat("a stream of batches of ", batch, " seeds"),
                                         &prefetch, deadline));
  slot.Hold(std::move(reserved));
  return prefetch;
}

// How sending a stream's batches ended when it did not fail.
enum class StreamEnd {
  kComplete,    // every batch was sent
  kClientGone,  // the call was cancelled or a write failed (the client went away)
};

// Sends the batches of `stream` (built with batches.StreamHooks()) to `writer` in order,
// marking `slot` as waiting for its client while a write blocks. A build error is returned.
absl::StatusOr<StreamEnd> SendBatches(grpc::ServerContext& context, engine::EpochStream& stream,
                                      ShmBatchWriter& batches,
                                      grpc::ServerWriter<v1::Minibatch>& writer,
                                      Admission::StreamSlot& slot, ServerStats& stats) {
  const auto cancelled = [&context] { return context.IsCancelled(); };
  while (!cancelled()) {
    absl::StatusOr<std::optional<ShmBatchWriter::Batch>> next = batches.Next(stream, cancelled);
    if (!next.ok()) {
      if (absl::IsCancelled(next.status())) break;
      return next.status();
    }
    if (!next->has_value()) return StreamEnd::kComplete;
    const absl::Time write_start = absl::Now();
    slot.SetWaitingForClient(true);
    const bool written = writer.Write((*next)->msg);
    slot.SetWaitingForClient(false);
    stats.AddWriterTimes(absl::ToDoubleSeconds((*next)->wait_build),
                         absl::ToDoubleSeconds((*next)->wait_ring),
                         absl::ToDoubleSeconds(absl::Now() - write_start));
    if (!written) break;
  }
  return StreamEnd::kClientGone;
}

// The status of a stream whose client went away: ResourceExhausted if admission reclaimed its
// slot for another stream (after `stream_idle` waiting for the client), else Cancelled.
absl::Status ClientGoneStatus(Admission::StreamSlot& slot, ServerStats& stats,
                              absl::Duration stream_idle) {
  if (slot.reclaimed()) {
    stats.StreamReclaimed();
    return absl::ResourceExhaustedError(
        absl::StrCat("stream reclaimed: it waited for its client for ",
                     absl::FormatDuration(stream_idle), " and another stream needed its slot"));
  }
  return absl::CancelledError("the client went away");
}

}  // namespace

grpc::Status PartitionServiceImpl::StreamBatches(grpc::ServerContext* context,
                                                 const v1::StreamBatchesRequest* request,
                                                 grpc::ServerWriter<v1::Minibatch>* writer) {
  CallTimer timer(stats_, "StreamBatches");
  absl::StatusOr<std::unique_ptr<Admission::StreamSlot>> slot =
      admission_.OpenStream(ClientKey(*context), [context] { context->TryCancel(); });
  if (!slot.ok()) {
    timer.set_ok(false);
    return rpc::ToGrpcStatus(slot.status());
  }
  stats_.StreamOpened();
  absl::Cleanup closed = [this] { stats_.StreamClosed(); };
  grpc::Status status;
  try {
    status = rpc::ToGrpcStatus(RunStream(context, *request, writer, **slot));
  } catch (const std::bad_alloc&) {
    status = OutOfMemory("streaming batches");
  }
  timer.set_ok(status.ok());
  return status;
}

absl::Status PartitionServiceImpl::RunStream(grpc::ServerContext* context,
                                             const v1::StreamBatchesRequest& request,
                                             grpc::ServerWriter<v1::Minibatch>* writer,
                                             Admission::StreamSlot& slot) {
  ASSIGN_OR_RETURN(engine::StreamRequest req, FromProto(request));
  RETURN_IF_ERROR(CheckRing(request, rings_));
  ASSIGN_OR_RETURN(std::shared_ptr<engine::TableSource> table,
                   OpenTable(tables_, peers_, request.table()));
  const engine::LocalPart& local = table != nullptr ? *table->view : local_;
  ShmBatchWriter::Options writer_options = WriterOptions(request);
  ASSIGN_OR_RETURN(const int prefetch,
                   ReserveStream(admission_, ClientKey(*context), local, req, options_.prefetch,
                                 writer_options.shared_memory ? 0 : options_.max_answer_bytes,
                                 slot, internal::CallDeadline(*context)));
  writer_options.waiting_for_client = [&slot](bool waiting) { slot.SetWaitingForClient(waiting); };
  ShmBatchWriter batches(std::move(writer_options));  // before the stream, which goes first
  // A table stream's jobs hold its source (EpochStream::Start): they may outlive this call.
  absl::StatusOr<std::unique_ptr<engine::EpochStream>> stream =
      table != nullptr ? engine::EpochStream::Start(std::move(table), executor_, std::move(req),
                                                    prefetch, batches.StreamHooks())
                       : engine::EpochStream::Start(local_, peers_, executor_, std::move(req),
                                                    prefetch, batches.StreamHooks());
  if (!stream.ok()) return stream.status();
  ASSIGN_OR_RETURN(const StreamEnd end,
                   SendBatches(*context, **stream, batches, *writer, slot, stats_));
  if (end == StreamEnd::kComplete) return absl::OkStatus();
  return ClientGoneStatus(slot, stats_, options_.stream_idle);
}

}  // namespace graphshard::server
