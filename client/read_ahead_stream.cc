#include "client/read_ahead_stream.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"

namespace graphshard::client {

ReadAheadStream::ReadAheadStream(std::unique_ptr<BatchStream> inner, int depth)
    : inner_(std::move(inner)), depth_(std::max(depth, 1)), reader_([this] { Run(); }) {}

ReadAheadStream::~ReadAheadStream() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  inner_->Cancel();  // a Next() blocked in the reader returns soon
  reader_.join();
}

void ReadAheadStream::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || std::ssize(ready_) < depth_;
      };
      mu_.Await(absl::Condition(&room));
      if (stop_) break;
    }
    absl::StatusOr<absl::optional<MinibatchData>> next = inner_->Next();
    const bool last = !next.ok() || !next->has_value();
    absl::MutexLock lock(&mu_);
    ready_.push_back(std::move(next));
    if (last) break;
  }
  absl::MutexLock lock(&mu_);
  done_ = true;
}

absl::StatusOr<absl::optional<MinibatchData>> ReadAheadStream::Next() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !ready_.empty() || done_; };
  mu_.Await(absl::Condition(&ready));
  if (ready_.empty()) {
    return absl::CancelledError("batch stream cancelled while reading ahead");
  }
  absl::StatusOr<absl::optional<MinibatchData>> next = std::move(ready_.front());
  ready_.pop_front();
  if (next.ok() && !next->has_value()) ready_.push_back(absl::optional<MinibatchData>());  // ended
  if (!next.ok()) ready_.push_back(next.status());  // the error again, as the stream would
  return next;
}

void ReadAheadStream::Cancel() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  inner_->Cancel();
}

}  // namespace graphshard::client
