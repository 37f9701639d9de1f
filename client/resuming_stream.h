#ifndef GRAPHSHARD_CLIENT_RESUMING_STREAM_H_
#define GRAPHSHARD_CLIENT_RESUMING_STREAM_H_

// A part's batch stream that outlives its server: when the stream breaks (the server died,
// stalled past --stall-timeout-s, lost a peer, shut down), it finds a live replica of the part
// again (PartDirectory: the registry read anew, health probed) and reopens the stream at the
// first batch it has not handed out. A batch is a pure function of (seeds, shuffle seed, epoch,
// batch index), so the batches after the break are those an unbroken stream would have sent.
// It gives up, with the last error and naming the part, when no server has answered for
// `wait_s` since the last batch; errors that a reconnect cannot cure (bad request, bad data: not
// common::IsTransientError) pass through at once. Every reconnect is reported through `log`.
// Not thread-safe, except Cancel().

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/batch_client.h"
#include "client/part_directory.h"

namespace graphshard::client {

struct ResumeOptions {
  double wait_s = 60;         // --server-wait-s: how long a part may be without a live server
  int preferred_replica = 0;  // where the search for a live replica starts (load spreading)
  std::function<void(const std::string&)> log;  // one line per reconnect; may be empty
};

class ResumingBatchStream final : public BatchStream {
 public:
  // `first` is the client the stream starts on (nullptr: a live replica, same-host ones first
  // (options.client_host_id), from resume.preferred_replica on). `directory` and
  // `metadata` must outlive the stream.
  ResumingBatchStream(PartDirectory& directory, int part, PartitionClient* first,
                      StreamOptions options, const ServerMetadata& metadata, ResumeOptions resume);
  ~ResumingBatchStream() override;

  // Opens the stream (on `first`, or a live replica found within wait_s); the server starts
  // building batches ahead. Errors of PartDirectory::Live and PartitionClient::StreamBatches.
  absl::Status Start();

  absl::StatusOr<absl::optional<MinibatchData>> Next() override;
  void Cancel() override;

  // Reconnects so far (tests, logs).
  int reconnects() const { return reconnects_; }

 private:
  // Opens the stream at the first batch not handed out, on a live replica.
  absl::Status Reopen(absl::Time deadline);
  // Reads the next batch into *out, opening the stream first if there is none (a live replica
  // searched until `deadline`). Unavailable if the stream ends early; DataLoss if the batch is
  // not the one expected next.
  absl::Status ReadOne(absl::Time deadline, absl::optional<MinibatchData>* out);
  // After the stream broke with `broken` (transient): logs, then looks for a live server and
  // reads the next batch there, until wait_s has passed (then the last error, naming the part).
  absl::Status Resume(const absl::Status& broken, absl::optional<MinibatchData>* out);

  PartDirectory& directory_;
  const int part_;
  PartitionClient* client_;
  const StreamOptions options_;
  const ServerMetadata& metadata_;
  const ResumeOptions resume_;
  int preferred_;            // replica index where the next search starts
  const int64_t per_epoch_;  // batches per epoch of this stream
  const int64_t total_;      // batches of the whole stream
  int64_t handed_out_ = 0;
  int reconnects_ = 0;
  std::atomic<bool> cancelled_{false};
  absl::Mutex mu_;  // guards swapping the stream against Cancel()
  std::unique_ptr<BatchStream> stream_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_RESUMING_STREAM_H_
