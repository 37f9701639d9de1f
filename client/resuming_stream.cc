#include "client/resuming_stream.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace graphshard::client {

bool Resumable(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:       // connection lost or refused, server stopping
    case absl::StatusCode::kDeadlineExceeded:  // stalled, or a peer of the server timed out
    case absl::StatusCode::kCancelled:         // the server cancelled (shutdown)
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kUnknown:            // gRPC's code for a stream reset
    case absl::StatusCode::kResourceExhausted:  // a restarted server not yet with free slots
      return true;
    default:
      return false;
  }
}

namespace {

int64_t BatchesPerEpoch(const StreamOptions& o) {
  if (o.num_batches > 0) return o.num_batches;
  return (static_cast<int64_t>(o.seeds.size()) + o.batch_size - 1) /
         std::max<int64_t>(1, o.batch_size);
}

}  // namespace

ResumingBatchStream::ResumingBatchStream(PartDirectory& directory, int part, PartitionClient* first,
                                         StreamOptions options, const ServerMetadata& metadata,
                                         ResumeOptions resume)
    : directory_(directory),
      part_(part),
      client_(first),
      options_(std::move(options)),
      metadata_(metadata),
      resume_(std::move(resume)),
      preferred_(resume_.preferred_replica),
      per_epoch_(BatchesPerEpoch(options_)),
      total_(per_epoch_ * std::max<int64_t>(1, options_.num_epochs) - options_.first_batch) {}

ResumingBatchStream::~ResumingBatchStream() {
  absl::MutexLock lock(&mu_);
  stream_.reset();
}

void ResumingBatchStream::Cancel() {
  cancelled_ = true;
  absl::MutexLock lock(&mu_);
  if (stream_ != nullptr) stream_->Cancel();
}

absl::Status ResumingBatchStream::Reopen(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    stream_.reset();  // cancels the broken one
  }
  if (client_ == nullptr) {
    ASSIGN_OR_RETURN(
        PartDirectory::LiveServer live,
        directory_.Live(part_, preferred_, &metadata_, deadline, options_.client_host_id,
                        [this] { return cancelled_.load(); }));
    client_ = live.client;
  }
  // Batch handed_out_ of the stream is batch (first_batch + handed_out_) counted from the start
  // of its first epoch.
  const int64_t at = options_.first_batch + handed_out_;
  StreamOptions o = options_;
  o.epoch = options_.epoch + at / per_epoch_;
  o.first_batch = at % per_epoch_;
  o.num_epochs = std::max<int64_t>(1, options_.num_epochs) - at / per_epoch_;
  ASSIGN_OR_RETURN(std::unique_ptr<BatchStream> stream, client_->StreamBatches(o, metadata_));
  absl::MutexLock lock(&mu_);
  stream_ = std::move(stream);
  if (cancelled_) stream_->Cancel();
  return absl::OkStatus();
}

absl::Status ResumingBatchStream::Start() {
  return Reopen(absl::Now() + absl::Seconds(resume_.wait_s));
}

absl::StatusOr<absl::optional<MinibatchData>> ResumingBatchStream::Next() {
  if (handed_out_ >= total_) return absl::optional<MinibatchData>();
  absl::Time deadline = absl::InfiniteFuture();  // set at the first failure since a batch
  int attempt = 0;
  while (true) {
    absl::Status status;
    BatchStream* stream = nullptr;
    {
      absl::MutexLock lock(&mu_);
      stream = stream_.get();
    }
    if (stream == nullptr) {
      status =
          Reopen(deadline != absl::InfiniteFuture() ? deadline
                                                    : absl::Now() + absl::Seconds(resume_.wait_s));
      if (status.ok()) continue;
    } else {
      absl::StatusOr<absl::optional<MinibatchData>> batch = stream->Next();
      if (batch.ok() && batch->has_value()) {
        const int64_t at = options_.first_batch + handed_out_;
        const int64_t epoch = options_.epoch + at / per_epoch_;
        if ((*batch)->epoch != epoch || (*batch)->batch_index != at % per_epoch_) {
          return absl::DataLossError(
              absl::StrCat("StreamBatches from ", client_->Label(), ": expected batch ",
                           at % per_epoch_, " of epoch ", epoch, ", got batch ",
                           (*batch)->batch_index, " of epoch ", (*batch)->epoch));
        }
        if (attempt > 0 && resume_.log) {
          resume_.log(absl::StrCat("part ", part_, ": resumed at batch ", at % per_epoch_,
                                   " of epoch ", epoch, " on ", client_->Label()));
        }
        ++handed_out_;
        return batch;
      }
      status = batch.ok()
                   ? absl::UnavailableError(absl::StrCat("StreamBatches from ", client_->Label(),
                                                         ": the stream ended after ", handed_out_,
                                                         " of ", total_, " batches"))
                   : batch.status();
    }
    if (cancelled_ || !Resumable(status)) return status;
    if (deadline == absl::InfiniteFuture()) {
      deadline = absl::Now() + absl::Seconds(resume_.wait_s);
      if (resume_.log) {
        resume_.log(absl::StrCat("part ", part_, ": stream broken after ", handed_out_, " of ",
                                 total_, " batches (", status.message(),
                                 "); looking for a live server, up to ", resume_.wait_s,
                                 "s (--server-wait-s)"));
      }
      ++reconnects_;
    } else if (absl::Now() >= deadline) {
      return absl::Status(status.code(),
                          absl::StrCat("part ", part_, ": no live server for ", resume_.wait_s,
                                       "s (--server-wait-s); last error: ", status.message()));
    }
    ++attempt;
    ++preferred_;       // the next replica first
    client_ = nullptr;  // look the part up again: a restarted server or another replica
    {
      absl::MutexLock lock(&mu_);
      stream_.reset();
    }
    // Backoff between attempts (a peer of a live server may be what is down).
    if (attempt > 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1000, 100 * attempt)));
    }
  }
}

}  // namespace graphshard::client
