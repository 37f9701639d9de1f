#ifndef GRAPHSHARD_CLIENT_READ_AHEAD_STREAM_H_
#define GRAPHSHARD_CLIENT_READ_AHEAD_STREAM_H_

// A batch stream read ahead by a thread of its own: the wrapped stream's Next() (the gRPC read,
// and the batch's decoding and checks: every id and edge index of a products-sized batch, about
// 14 MB read out of shared memory, 2 ms on the GPU machine) runs while the caller works on the
// batches before, up to `depth` batches ahead. A trainer's input pipeline thread read its
// streams one after the other, each batch's decoding in series with the staging of the one
// before, and with the step captured as a CUDA graph that thread bounded the epoch
// (tests/bench/RESULTS.md, "Static shapes and CUDA graphs"). Batches, the end and an error
// arrive in the wrapped stream's order; after an error or the end nothing more is read.
// Thread-safe as BatchStream: Next() from one thread; Cancel() from any.

#include <deque>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/optional.h"
#include "client/batch_client.h"

namespace graphshard::client {

// How far the trainer's input pipeline reads each stream ahead (trainer/epoch_loop.cc): the
// batches a trainer holds grow by as many (StreamOptions::max_held_batches).
inline constexpr int kPipelineReadAhead = 2;

class ReadAheadStream final : public BatchStream {
 public:
  // Starts reading `inner` (opened) at once, at most `depth` (>= 1) batches ahead.
  ReadAheadStream(std::unique_ptr<BatchStream> inner, int depth);
  // Cancels the wrapped stream and joins the reader.
  ~ReadAheadStream() override;
  ReadAheadStream(const ReadAheadStream&) = delete;
  ReadAheadStream& operator=(const ReadAheadStream&) = delete;

  absl::StatusOr<absl::optional<MinibatchData>> Next() override;
  void Cancel() override;

 private:
  void Run();

  const std::unique_ptr<BatchStream> inner_;
  const int depth_;
  absl::Mutex mu_;
  std::deque<absl::StatusOr<absl::optional<MinibatchData>>> ready_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;  // the reader has returned
  std::thread reader_;                      // last: starts once the members above are set
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_READ_AHEAD_STREAM_H_
