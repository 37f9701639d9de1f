#include "client/resuming_stream.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/poll.h"
#include "common/status_macros.h"
#include "common/transient_error.h"

namespace graphshard::client {

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

absl::Status ResumingBatchStream::ReadOne(absl::Time deadline, absl::optional<MinibatchData>* out) {
  BatchStream* stream = nullptr;
  {
    absl::MutexLock lock(&mu_);
    stream = stream_.get();
  }
  if (stream == nullptr) {
    RETURN_IF_ERROR(Reopen(deadline));
    absl::MutexLock lock(&mu_);
    stream = stream_.get();
  }
  ASSIGN_OR_RETURN(absl::optional<MinibatchData> batch, stream->Next());
  if (!batch.has_value()) {
    return absl::UnavailableError(absl::StrCat("StreamBatches from ", client_->Label(),
                                               ": the stream ended after ", handed_out_, " of ",
                                               total_, " batches"));
  }
  const int64_t at = options_.first_batch + handed_out_;
  const int64_t epoch = options_.epoch + at / per_epoch_;
  if (batch->epoch != epoch || batch->batch_index != at % per_epoch_) {
    return absl::DataLossError(absl::StrCat(
        "StreamBatches from ", client_->Label(), ": expected batch ", at % per_epoch_, " of epoch ",
        epoch, ", got batch ", batch->batch_index, " of epoch ", batch->epoch));
  }
  *out = std::move(batch);
  return absl::OkStatus();
}

absl::Status ResumingBatchStream::Resume(const absl::Status& broken,
                                         absl::optional<MinibatchData>* out) {
  if (resume_.log) {
    resume_.log(absl::StrCat("part ", part_, ": stream broken after ", handed_out_, " of ", total_,
                             " batches (", broken.message(), "); looking for a live server, up to ",
                             resume_.wait_s, "s (--server-wait-s)"));
  }
  ++reconnects_;
  common::PollOptions poll;
  poll.deadline = absl::Now() + absl::Seconds(resume_.wait_s);
  // The first try at once (another replica may be live), then a growing pause: a peer of a
  // live server may be what is down.
  poll.interval = absl::Milliseconds(200);
  poll.interval_step = absl::Milliseconds(100);
  poll.max_interval = absl::Seconds(1);
  poll.timeout_message = absl::StrCat("part ", part_, ": no live server for ", resume_.wait_s,
                                      "s (--server-wait-s); last error");
  poll.cancelled = [this] { return cancelled_.load(); };
  RETURN_IF_ERROR(common::PollUntil(poll, [&] {
    ++preferred_;       // the next replica first
    client_ = nullptr;  // look the part up again: a restarted server or another replica
    {
      absl::MutexLock lock(&mu_);
      stream_.reset();
    }
    return ReadOne(poll.deadline, out);
  }));
  if (resume_.log) {
    const int64_t at = options_.first_batch + handed_out_;
    resume_.log(absl::StrCat("part ", part_, ": resumed at batch ", at % per_epoch_, " of epoch ",
                             options_.epoch + at / per_epoch_, " on ", client_->Label()));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::optional<MinibatchData>> ResumingBatchStream::Next() {
  if (handed_out_ >= total_) return absl::optional<MinibatchData>();
  absl::optional<MinibatchData> batch;
  const absl::Status status = ReadOne(absl::Now() + absl::Seconds(resume_.wait_s), &batch);
  if (!status.ok()) {
    if (cancelled_ || !common::IsTransientError(status)) return status;
    RETURN_IF_ERROR(Resume(status, &batch));
  }
  ++handed_out_;
  return batch;
}

}  // namespace graphshard::client
