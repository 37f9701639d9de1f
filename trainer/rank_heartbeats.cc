#include "trainer/rank_heartbeats.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphshard::trainer {

RankHeartbeats::RankHeartbeats(std::unique_ptr<KeyValueStore> store, int rank, int world_size,
                               std::string where, absl::Duration every)
    : store_(std::move(store)),
      rank_(rank),
      world_size_(world_size),
      where_(std::move(where)),
      every_(every) {
  thread_ = std::thread([this] { Loop(); });
}

RankHeartbeats::~RankHeartbeats() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

std::string RankHeartbeats::Key(int rank) { return absl::StrCat("graphshard/heartbeat/", rank); }

void RankHeartbeats::Loop() {
  int64_t count = 0;
  while (true) {
    // A failed write is retried at the next beat; the store's own timeout bounds it.
    (void)store_->Set(Key(rank_), absl::StrCat(++count));
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stop_), every_)) return;
  }
}

absl::StatusOr<std::vector<int64_t>> RankHeartbeats::ReadCounts() {
  std::vector<int64_t> counts(static_cast<size_t>(world_size_), -1);
  for (int r = 0; r < world_size_; ++r) {
    if (r == rank_) continue;
    absl::StatusOr<bool> has = store_->Contains(Key(r));
    if (!has.ok()) return has.status();
    if (!*has) continue;
    absl::StatusOr<std::string> v = store_->Get(Key(r));
    if (!v.ok()) return v.status();
    int64_t n = -1;
    if (absl::SimpleAtoi(*v, &n)) counts[static_cast<size_t>(r)] = n;
  }
  return counts;
}

std::string RankHeartbeats::DiagnoseLoss() {
  const absl::Duration window = every_ * 2.5;
  const std::string unreachable =
      absl::StrCat("the rendezvous store at ", where_,
                   " (hosted by rank 0) is unreachable: rank 0 is lost (");
  absl::StatusOr<std::vector<int64_t>> before = ReadCounts();
  if (!before.ok()) return absl::StrCat(unreachable, before.status().message(), ")");
  absl::SleepFor(window);
  absl::StatusOr<std::vector<int64_t>> after = ReadCounts();
  if (!after.ok()) return absl::StrCat(unreachable, after.status().message(), ")");
  std::vector<int> lost;
  for (int r = 0; r < world_size_; ++r) {
    if (r != rank_ && (*after)[static_cast<size_t>(r)] == (*before)[static_cast<size_t>(r)]) {
      lost.push_back(r);
    }
  }
  if (lost.empty()) {
    return absl::StrCat("every other rank still beats (a late rank, or the network between "
                        "ranks failed)");
  }
  return absl::StrCat("lost rank(s): ", absl::StrJoin(lost, ", "), " of ", world_size_,
                      " (no heartbeat in the rendezvous store for ",
                      absl::FormatDuration(window), ")");
}

namespace {

// Forwards every collective; a failed one's status gets the heartbeats' diagnosis appended.
class DiagnosingCommunicator final : public Communicator {
 public:
  DiagnosingCommunicator(std::unique_ptr<Communicator> inner,
                         std::unique_ptr<RankHeartbeats> heartbeats)
      : inner_(std::move(inner)), heartbeats_(std::move(heartbeats)) {}
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  const char* name() const override { return inner_->name(); }
  MemorySpace float_memory() const override { return inner_->float_memory(); }
  absl::Status AllReduce(absl::Span<float> data, ReduceOp op) override {
    return Diagnosed(inner_->AllReduce(data, op));
  }
  absl::Status AllReduce(absl::Span<double> data, ReduceOp op) override {
    return Diagnosed(inner_->AllReduce(data, op));
  }
  absl::Status AllReduce(absl::Span<int64_t> data, ReduceOp op) override {
    return Diagnosed(inner_->AllReduce(data, op));
  }
  absl::Status QueueAllReduce(absl::Span<float> data, ReduceOp op) override {
    return Diagnosed(inner_->QueueAllReduce(data, op));
  }
  absl::Status Flush() override { return Diagnosed(inner_->Flush()); }
  absl::Status Broadcast(absl::Span<float> data, int root) override {
    return Diagnosed(inner_->Broadcast(data, root));
  }

 private:
  absl::Status Diagnosed(absl::Status s) {
    if (s.ok() || diagnosed_) return s;
    diagnosed_ = true;  // once: later failures are the same loss
    return absl::Status(s.code(), absl::StrCat(s.message(), "; ", heartbeats_->DiagnoseLoss()));
  }
  std::unique_ptr<Communicator> inner_;
  std::unique_ptr<RankHeartbeats> heartbeats_;
  bool diagnosed_ = false;
};

}  // namespace

std::unique_ptr<Communicator> WithLossDiagnosis(std::unique_ptr<Communicator> comm,
                                                std::unique_ptr<RankHeartbeats> heartbeats) {
  return std::make_unique<DiagnosingCommunicator>(std::move(comm), std::move(heartbeats));
}

}  // namespace graphshard::trainer
