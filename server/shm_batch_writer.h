#ifndef GRAPHSHARD_SERVER_SHM_BATCH_WRITER_H_
#define GRAPHSHARD_SERVER_SHM_BATCH_WRITER_H_

// How one stream's batches go on the wire (PartitionServiceImpl::StreamBatches). For a same-host
// client every batch's arrays go to shared memory: the feature rows are written there as they
// are gathered (the stream's FeaturePlacer), the other arrays when the batch is packed on its
// builder thread (the stream's finisher), into a segment of the client's ring (shm/ring.h,
// reused once released; from the ring its previous stream used when it names its reader,
// server/ring_registry.h) or a one-shot one. Other clients, and batches whose segment cannot be
// made (e.g. /dev/shm full), get the arrays inline in the message. Next() hands out the
// stream's messages in order, each after the ring's back-pressure (WaitForRingRoom).
//
// Owns the stream's shared-memory names: a stream that completes hands the one-shot segments it
// sent to Options::deferred (unlinked after a grace, whoever the client is: one that never
// opens them leaves nothing behind); one that does not complete (the writer is
// destroyed before Next() returned the end) unlinks the one-shot segments it sent and has its
// ring dropped with the ring's names (the client may never open them); segments of batches never
// sent are unlinked with their batch. The hooks keep what they use alive: builders may outlive
// the writer. Next() and WaitForRingRoom() are for the stream's writer thread; the hooks are
// thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/graphshard.pb.h"
#include "server/deferred_unlink.h"
#include "server/engine/epoch_stream.h"
#include "server/ring_registry.h"
#include "server/server_stats.h"
#include "shm/ring.h"

namespace graphshard::server {

class ShmBatchWriter {
 public:
  struct Options {
    bool shared_memory = false;  // the client is on this host and the server sends through shm
    // StreamBatchesRequest.shm_ring: ring segments the client holds at most (0: one-shot
    // segments), and shm_ring_id: its reader, whose ring `rings` keeps (0: a ring of its own).
    int64_t ring_batches = 0;
    uint64_t ring_id = 0;
    // One-shot names of a completed stream go here (unlinked after its grace); null: kept.
    DeferredUnlinks* deferred = nullptr;
    // StreamBatchesRequest.shm_ring_key: checked by RingRegistry, and every segment's name
    // carries its tag (shm::TaggedSegmentName)
    std::string ring_key = {};
    RingRegistry* rings = nullptr;  // required for a ring; must outlive the writer
    std::string shm_prefix;         // one-shot segment names: prefix + a number from the counter
    std::atomic<int64_t>* shm_counter = nullptr;
    ServerStats* stats = nullptr;  // required; must outlive the stream's builders
    // Told true while the writer waits for the client to open or release ring segments, false
    // after (admission.h: a stream waiting too long is idle). Optional.
    std::function<void(bool)> waiting_for_client = nullptr;
  };
  // How long a reader that opened every batch sent and still holds ring_batches of them is
  // waited for (it may be waiting for the next one: it holds more than it announced).
  static constexpr absl::Duration kRingGiveUp = absl::Seconds(1);
  // How often a wait for the ring asks `cancelled` (gRPC's synchronous API has no callback).
  static constexpr absl::Duration kCancelCheck = absl::Milliseconds(50);

  explicit ShmBatchWriter(Options options);
  ~ShmBatchWriter();
  ShmBatchWriter(const ShmBatchWriter&) = delete;
  ShmBatchWriter& operator=(const ShmBatchWriter&) = delete;

  // For EpochStream::Start: placement of the feature rows (same-host clients), packing, and
  // build statistics, on the builder threads.
  engine::EpochStream::Hooks StreamHooks() const;

  struct Batch {
    v1::Minibatch msg;  // epoch and batch_index set
    absl::Duration wait_build;  // for the stream's next batch to be built
    absl::Duration wait_ring;   // for the ring to have room (and the bookkeeping)
  };
  // The next message of `stream` (built with StreamHooks()), once the ring has room; nullopt
  // at the end of the stream (which then counts as complete). A build error is returned.
  absl::StatusOr<std::optional<Batch>> Next(engine::EpochStream& stream,
                                            const std::function<bool()>& cancelled);

  // Back-pressure of the ring: returns once fewer than ring_batches sent segments are held by
  // the client (OK at once without a ring). While the client has sent segments it has not
  // opened yet it is behind or pausing (a trainer evaluating between the epochs of its stream)
  // and is waited for as long as `cancelled` is false (Cancelled then); once it has opened
  // every one and still holds ring_batches, DeadlineExceeded after kRingGiveUp (a stall,
  // counted in Stats.shm_ring_stalls: the batch goes anyway). Wakes when the client opens or
  // releases a segment (ShmRing::WaitForReader), not by polling.
  absl::Status WaitForRingRoom(const std::function<bool()>& cancelled);

  // The stream's ring (null without one).
  const std::shared_ptr<shm::ShmRing>& ring() const { return ring_; }

 private:
  struct Shared;  // what the builder threads use

  std::shared_ptr<Shared> shared_;
  std::shared_ptr<shm::ShmRing> ring_;
  const int64_t ring_batches_;
  const uint64_t ring_id_;
  RingRegistry* const rings_;
  ServerStats& stats_;
  DeferredUnlinks* const deferred_;
  std::function<void(bool)> waiting_for_client_;
  std::vector<std::string> sent_segments_;  // one-shot names sent, unlinked unless completed
  bool ring_sent_ = false;  // a ring segment went to the client
  bool completed_ = false;
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_SHM_BATCH_WRITER_H_
