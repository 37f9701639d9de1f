#ifndef GRAPHSHARD_SERVER_ENGINE_EPOCH_STREAM_H_
#define GRAPHSHARD_SERVER_ENGINE_EPOCH_STREAM_H_

// An epoch of minibatches over one trainer's seed shard, built ahead of the reader on an
// executor: at most `prefetch` batches are being built or waiting at any time (the bound on
// memory); the reader's pace (gRPC flow control) paces the builders.
//
// Batch b of an epoch: the seeds are shuffled with (shuffle_seed, epoch) when shuffle is on;
// the first ceil(n / batch_size) batches cut that order in pieces (the last may be short);
// further batches (num_batches above that) wrap around the shuffled order, so every rank can
// run the same number of steps. The sampling seed of batch b is a function of (shuffle_seed,
// epoch, b). So a batch is a deterministic function of (seeds, request, b) whatever the thread
// count, and a stream resumed at first_batch = b yields the same batches from b on.
//
// num_epochs > 1 continues with epochs epoch+1, epoch+2, ... (each from batch 0, num_batches
// long, shuffled for its own epoch) in one stream: the builders run into the next epoch while the
// reader finishes this one, so an epoch does not start by waiting for its first batches. The
// batches are those of one stream per epoch.

#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/executor.h"
#include "server/engine/layer_tables.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/engine/types.h"

namespace graphshard::engine {

struct StreamRequest {
  std::string seed_type;  // empty = target type
  std::vector<int64_t> seeds;
  int64_t batch_size = 0;
  bool shuffle = true;
  uint64_t shuffle_seed = 0;
  int64_t epoch = 0;
  int64_t first_batch = 0;
  int64_t num_batches = 0;  // per epoch; 0 = ceil(n / batch_size)
  int64_t num_epochs = 1;   // epochs epoch .. epoch + num_epochs - 1
  SamplingConfig sampling;
  // Enabled: seeds are positions in the local part's edge split (types.h, LinkSampling);
  // seed_type is ignored.
  LinkSampling link{};
};

// The seeds of batch `b` (exposed for tests and for clients that want to know the plan).
std::vector<int64_t> BatchSeeds(const std::vector<int64_t>& shuffled, int64_t batch_size,
                                int64_t b);
// The shard in the order of `epoch`.
std::vector<int64_t> ShuffledSeeds(const StreamRequest& request, int64_t epoch);
uint64_t BatchSamplingSeed(const StreamRequest& request, int64_t epoch, int64_t b);

class EpochStream {
 public:
  // Validates everything in front, once: InvalidArgument for a bad batch size, empty /
  // oversized / duplicated / foreign seeds, bad sampling, first_batch out of range, epoch,
  // num_epochs or num_batches whose sums or products overflow; ResourceExhausted when one
  // batch's cost bound is above the budget (request_cost.h). The batches
  // (pieces of the validated shard) are then built without repeating these checks. `local`, `peers`
  // and `executor` must outlive the stream and every job it posted (destroy the executor first).
  // Optional, both run on the builder threads and must be thread-safe:
  //  - place_features: where each batch's feature rows are written (types.h, FeaturePlacer);
  //  - finish: runs after each batch is built (before it counts as ready), e.g. to convert it
  //    for the wire while the reader sends the previous one; it may replace the batch's
  //    contents (see Minibatch::attachment);
  //  - built: the time each batch took (for statistics).
  struct Hooks {
    FeaturePlacer place_features;
    std::function<void(Minibatch&)> finish;
    // After each batch and its finish: what each phase cost (Minibatch::profile).
    std::function<void(const BuildProfile&)> built;
  };
  static absl::StatusOr<std::unique_ptr<EpochStream>> Start(const LocalPart& local, Peers& peers,
                                                            common::Executor& executor,
                                                            StreamRequest request, int prefetch,
                                                            Hooks hooks = {});
  // As above, over a layer table (layer_tables.h): samples and gathers through `table`, which
  // the stream and every job it posted hold, so only `executor` (and the table's inner peers)
  // must outlive them; DropTable meanwhile does not end the stream.
  static absl::StatusOr<std::unique_ptr<EpochStream>> Start(std::shared_ptr<TableSource> table,
                                                            common::Executor& executor,
                                                            StreamRequest request, int prefetch,
                                                            Hooks hooks = {});
  // Cancels: queued jobs are skipped, finished batches are freed now, a batch being built is
  // freed when its builder returns.
  ~EpochStream();

  // Batches per epoch.
  int64_t num_batches() const { return per_epoch_; }
  // How often Next() asks its `cancelled` while it waits for a build.
  static constexpr absl::Duration kCancelPoll = absl::Milliseconds(20);

  // The next batch in order (its epoch and index are next_epoch() and next_index() before the
  // call), or nullopt at the end. Blocks until it is built, asking `cancelled` (if set) every
  // kCancelPoll: once it says true, the stream's builders are told to stop (between hops and
  // inside long loops) and Cancelled is returned. A build error is returned once and ends the
  // stream; a build that ran out of memory (std::bad_alloc) is ResourceExhausted.
  absl::StatusOr<std::optional<Minibatch>> Next(const CancelFn& cancelled = {});
  int64_t next_epoch() const;
  int64_t next_index() const { return next_ % per_epoch_; }

 private:
  struct Shared;
  struct Job;
  EpochStream() = default;
  // Start's work; `table` (or null) is what `local` and `peers` belong to.
  static absl::StatusOr<std::unique_ptr<EpochStream>> Create(
      const LocalPart& local, Peers& peers, std::shared_ptr<TableSource> table,
      common::Executor& executor, StreamRequest request, int prefetch, Hooks hooks);
  void PostUpTo(int64_t end);

  std::shared_ptr<Shared> shared_;
  std::deque<std::shared_ptr<Job>> window_;
  int prefetch_ = 1;
  int64_t per_epoch_ = 1;
  // Positions count batches over all the stream's epochs: epoch request.epoch + p / per_epoch_,
  // batch p % per_epoch_.
  int64_t end_ = 0;
  int64_t next_ = 0;    // next position to hand out
  int64_t posted_ = 0;  // next position to post
  // The seed order of the epoch of the last posted position.
  int64_t shuffled_epoch_ = -1;
  std::shared_ptr<const std::vector<int64_t>> shuffled_;
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_EPOCH_STREAM_H_
