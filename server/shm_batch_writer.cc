#include "server/shm_batch_writer.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "server/proto_convert.h"

namespace graphshard::server {
namespace {

// The shared-memory segment of a batch, made before its feature rows are gathered (the
// stream's FeaturePlacer) so the rows are written once, where the client reads them. Held in
// Minibatch::attachment until the finisher packs the rest of the batch into it; unlinked if the
// batch is dropped before that. Without shared memory (creation failed) the rows go to `heap`.
struct PlacedSegment final : engine::BatchPayload {
  std::shared_ptr<shm::ShmSegment> segment;
  bool ring = false;  // a segment of the stream's ShmRing (which unlinks it), not a one-shot one
  std::vector<char> heap;
  PlacedSegment() = default;
  PlacedSegment(const PlacedSegment&) = delete;
  PlacedSegment& operator=(const PlacedSegment&) = delete;
  ~PlacedSegment() override {
    if (segment != nullptr && !ring) shm::UnlinkShm(segment->name());
  }
};

// A batch converted for the wire on its builder thread (the finisher), so the stream's writer
// only sends. Owns its one-shot segment until Release(): a batch never sent (stream cancelled,
// client gone) unlinks it.
struct PackedBatch final : engine::BatchPayload {
  v1::Minibatch msg;
  std::string segment;  // a one-shot segment's name; "" = arrays inline or in a ring segment
  // A ring segment, held until sent: one dropped unsent goes back to its ring (ShmRing).
  std::shared_ptr<shm::ShmSegment> ring_segment;
  int64_t sampled_edges = 0;
  int64_t payload_bytes = 0;
  PackedBatch() = default;
  PackedBatch(const PackedBatch&) = delete;
  PackedBatch& operator=(const PackedBatch&) = delete;
  ~PackedBatch() override {
    if (!segment.empty()) shm::UnlinkShm(segment);
  }
  std::string Release() { return std::exchange(segment, std::string()); }
};

// A batch that found no shared memory (e.g. /dev/shm full): said on stderr for the 1st, 2nd,
// 4th, 8th... such batch of the process, so that a full /dev/shm under a long job does not
// flood the log.
void SayNoSharedMemory(const absl::Status& why, const char* instead) {
  static std::atomic<int64_t> times{0};
  const int64_t n = ++times;
  if ((n & (n - 1)) != 0) return;
  std::fprintf(stderr, "graphshard-server: %s; %s (%lld batch(es) without shared memory so far)\n",
               std::string(why.message()).c_str(), instead, static_cast<long long>(n));
}

}  // namespace

struct ShmBatchWriter::Shared {
  bool shared_memory = false;
  std::shared_ptr<shm::ShmRing> ring;  // null: one-shot segments
  std::string shm_prefix;
  std::string key;  // the client's: one-shot names carry its tag (shm::TaggedSegmentName)
  std::atomic<int64_t>* shm_counter = nullptr;
  ServerStats* stats = nullptr;

  // The stream's FeaturePlacer: the batch's segment (sized for the whole batch, from the ring
  // when there is one) and the places of the feature rows in it (ShmFeatureOffsets).
  absl::StatusOr<std::vector<absl::Span<char>>> Place(engine::Minibatch& batch,
                                                      const std::vector<size_t>& feature_bytes);
  // The stream's finisher: packs the batch into its segment, a new one-shot segment, or the
  // message, and leaves only the PackedBatch in it.
  void Finish(engine::Minibatch& built);
  // Converts `batch` into `msg` through a new one-shot segment when `shm`; returns the
  // segment's name ("" when inline).
  std::string Pack(const engine::Minibatch& batch, bool shm, v1::Minibatch* msg);
};

absl::StatusOr<std::vector<absl::Span<char>>> ShmBatchWriter::Shared::Place(
    engine::Minibatch& batch, const std::vector<size_t>& feature_bytes) {
  auto placement = std::make_shared<PlacedSegment>();
  std::vector<absl::Span<char>> spans;
  const size_t segment_bytes = ShmBytes(batch, &feature_bytes);
  absl::StatusOr<std::shared_ptr<shm::ShmSegment>> segment;
  if (ring != nullptr) {
    bool reused = false;
    segment = ring->Acquire(segment_bytes, &reused);
    placement->ring = true;
    if (segment.ok()) stats->AddShmSegment(reused);
  } else {
    segment = shm::ShmSegment::Create(
        shm::TaggedSegmentName(absl::StrCat(shm_prefix, (*shm_counter)++), key), segment_bytes);
    if (segment.ok()) stats->AddShmSegment(false);
  }
  if (segment.ok()) {
    placement->segment = *std::move(segment);
    const std::vector<size_t> offsets = ShmFeatureOffsets(feature_bytes);
    for (size_t t = 0; t < feature_bytes.size(); ++t) {
      spans.emplace_back(placement->segment->data() + offsets[t], feature_bytes[t]);
    }
  } else {
    // No shared memory (e.g. /dev/shm full): gather into the heap; Pack falls back to inline.
    SayNoSharedMemory(segment.status(), "gathering the batch into the heap");
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

void ShmBatchWriter::Shared::Finish(engine::Minibatch& built) {
  auto packed = std::make_shared<PackedBatch>();
  packed->sampled_edges = built.NumSampledEdges();
  packed->payload_bytes = built.PayloadBytes();
  auto placed = std::dynamic_pointer_cast<PlacedSegment>(built.attachment);
  if (placed != nullptr && placed->segment != nullptr) {
    ToProto(built, *placed->segment, &packed->msg);
    stats->AddShmBytes(packed->payload_bytes);  // not the segment's size (a ring's may be larger)
    if (placed->ring) {
      packed->msg.set_shm_ring(true);  // the ring unlinks it if the client never opens it
      packed->ring_segment = placed->segment;
    } else {
      packed->segment = placed->segment->name();  // the name now belongs to `packed`
    }
    placed->segment.reset();
  } else {
    packed->segment = Pack(built, shared_memory, &packed->msg);
  }
  engine::Minibatch light;  // the arrays are in the message or the segment now: free them
  light.batch_size = built.batch_size;
  light.attachment = std::move(packed);
  built = std::move(light);
}

std::string ShmBatchWriter::Shared::Pack(const engine::Minibatch& batch, bool shm,
                                         v1::Minibatch* msg) {
  if (shm) {
    std::string name = shm::TaggedSegmentName(absl::StrCat(shm_prefix, (*shm_counter)++), key);
    auto segment = shm::ShmSegment::Create(name, ShmBytes(batch));
    if (segment.ok()) {
      stats->AddShmSegment(false);
      ToProto(batch, **segment, msg);
      stats->AddShmBytes(batch.PayloadBytes());
      return name;
    }
    // No shared memory (e.g. /dev/shm full): fall back to bytes over gRPC for this batch.
    SayNoSharedMemory(segment.status(), "sending the batch inline");
  }
  ToProto(batch, msg);
  return "";
}

ShmBatchWriter::ShmBatchWriter(Options options)
    : shared_(std::make_shared<Shared>()), ring_batches_(options.ring_batches),
      ring_id_(options.ring_id), rings_(options.rings), stats_(*options.stats),
      deferred_(options.deferred), waiting_for_client_(std::move(options.waiting_for_client)) {
  if (options.shared_memory && options.ring_batches > 0) {
    ring_ = rings_->Acquire(ring_id_, options.ring_key);
  }
  shared_->shared_memory = options.shared_memory;
  shared_->ring = ring_;
  shared_->shm_prefix = std::move(options.shm_prefix);
  shared_->key = options.ring_key;
  shared_->shm_counter = options.shm_counter;
  shared_->stats = options.stats;
}

ShmBatchWriter::~ShmBatchWriter() {
  if (!completed_) {
    for (const std::string& name : sent_segments_) shm::UnlinkShm(name);
  } else if (deferred_ != nullptr) {
    deferred_->Add(std::move(sent_segments_));
  }
  // A ring some of whose segments went out on a stream that did not complete is dropped and
  // its names unlinked: the client may not have opened every one.
  if (ring_ != nullptr) rings_->Release(ring_id_, ring_, ring_sent_ && !completed_);
}

engine::EpochStream::Hooks ShmBatchWriter::StreamHooks() const {
  engine::EpochStream::Hooks hooks;
  std::shared_ptr<Shared> shared = shared_;
  if (shared->shared_memory) {
    hooks.place_features = [shared](engine::Minibatch& batch,
                                    const std::vector<size_t>& feature_bytes) {
      return shared->Place(batch, feature_bytes);
    };
  }
  hooks.finish = [shared](engine::Minibatch& built) { shared->Finish(built); };
  hooks.built = [shared](const engine::BuildProfile& p) { shared->stats->AddBuildProfile(p); };
  return hooks;
}

absl::StatusOr<std::optional<ShmBatchWriter::Batch>> ShmBatchWriter::Next(
    engine::EpochStream& stream, const std::function<bool()>& cancelled) {
  const int64_t epoch = stream.next_epoch();
  const int64_t index = stream.next_index();
  const absl::Time wait_start = absl::Now();
  ASSIGN_OR_RETURN(std::optional<engine::Minibatch> next, stream.Next(cancelled));
  const absl::Time built = absl::Now();
  if (!next.has_value()) {
    completed_ = true;
    return std::nullopt;
  }
  std::shared_ptr<PackedBatch> packed = std::dynamic_pointer_cast<PackedBatch>(next->attachment);
  next.reset();
  if (packed == nullptr) return absl::InternalError("a streamed batch was not packed");
  Batch out;
  out.msg = std::move(packed->msg);
  out.msg.set_epoch(epoch);
  out.msg.set_batch_index(index);
  std::string segment = packed->Release();
  if (!segment.empty()) sent_segments_.push_back(std::move(segment));
  if (ring_ != nullptr && out.msg.shm_ring()) {
    WaitForRingRoom(cancelled).IgnoreError();  // a stall or a cancel: it goes (or fails) anyway
    ring_->MarkSent(out.msg.shm_name());
    packed->ring_segment.reset();
    out.msg.set_shm_ring_serial(ring_->serial());
    ring_sent_ = true;
  }
  stats_.AddBatch();
  stats_.AddSampledEdges(packed->sampled_edges);
  stats_.AddBytesSent(packed->payload_bytes);
  out.wait_build = built - wait_start;
  out.wait_ring = absl::Now() - built;
  return out;
}

absl::Status ShmBatchWriter::WaitForRingRoom(const std::function<bool()>& cancelled) {
  if (ring_ == nullptr) return absl::OkStatus();
  shm::ShmRing::ReaderHold hold = ring_->HeldByReader();
  absl::Time give_up = absl::Now() + kRingGiveUp;
  bool was_unopened = false;
  if (hold.held >= ring_batches_ && waiting_for_client_) waiting_for_client_(true);
  absl::Cleanup waited = [this] {
    if (waiting_for_client_) waiting_for_client_(false);
  };
  while (hold.held >= ring_batches_) {
    if (cancelled()) return absl::CancelledError("the stream was cancelled");
    const absl::Time now = absl::Now();
    // The give-up clock starts when the client has opened every segment sent: the wait below
    // returns as it opens the last one, so that is now.
    if (hold.unopened > 0 || was_unopened) {
      give_up = now + kRingGiveUp;
    } else if (now >= give_up) {
      stats_.AddShmRingStall();
      return absl::DeadlineExceededError(
          absl::StrCat("the client holds ", hold.held, " ring batches of ", ring_batches_,
                       " announced, all opened, for ", absl::FormatDuration(kRingGiveUp)));
    }
    was_unopened = hold.unopened > 0;
    hold = ring_->WaitForReader(hold, std::min(give_up, now + kCancelCheck));
  }
  return absl::OkStatus();
}

}  // namespace graphshard::server
