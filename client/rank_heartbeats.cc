#include "client/rank_heartbeats.h"

#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

namespace graphshard::client {

struct RankHeartbeats::Shared {
  explicit Shared(std::unique_ptr<KeyValueStore> s) : store(std::move(s)) {}
  // One store call at a time: the beats and a diagnosis share the connection.
  absl::Mutex call_mu;
  std::unique_ptr<KeyValueStore> store ABSL_PT_GUARDED_BY(call_mu);
  absl::Mutex mu;
  bool stop ABSL_GUARDED_BY(mu) = false;
};

namespace {

// Every other rank's count, -1 where it has none yet; an error when the store fails.
absl::StatusOr<std::vector<int64_t>> ReadCounts(RankHeartbeats::Shared& shared, int rank,
                                                int world_size) {
  absl::MutexLock lock(&shared.call_mu);
  std::vector<int64_t> counts(static_cast<size_t>(world_size), -1);
  for (int r = 0; r < world_size; ++r) {
    if (r == rank) continue;
    absl::StatusOr<bool> has = shared.store->Contains(RankHeartbeats::Key(r));
    if (!has.ok()) return has.status();
    if (!*has) continue;
    absl::StatusOr<std::string> v = shared.store->Get(RankHeartbeats::Key(r));
    if (!v.ok()) return v.status();
    int64_t n = -1;
    if (absl::SimpleAtoi(*v, &n)) counts[static_cast<size_t>(r)] = n;
  }
  return counts;
}

// ReadCounts on its own detached thread, waited for up to `deadline`: DeadlineExceeded then
// (the thread, stuck in the store, is left behind; it owns what it uses).
absl::StatusOr<std::vector<int64_t>> ReadCountsWithin(
    std::shared_ptr<RankHeartbeats::Shared> shared, int rank, int world_size,
    absl::Duration deadline) {
  struct Result {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<std::vector<int64_t>> counts ABSL_GUARDED_BY(mu);
  };
  auto result = std::make_shared<Result>();
  std::thread([shared, result, rank, world_size] {
    absl::StatusOr<std::vector<int64_t>> counts = ReadCounts(*shared, rank, world_size);
    absl::MutexLock lock(&result->mu);
    result->counts = std::move(counts);
    result->done = true;
  }).detach();
  absl::MutexLock lock(&result->mu);
  if (!result->mu.AwaitWithTimeout(absl::Condition(&result->done), deadline)) {
    return absl::DeadlineExceededError(
        absl::StrCat("no answer within ", absl::FormatDuration(deadline)));
  }
  return result->counts;
}

}  // namespace

RankHeartbeats::RankHeartbeats(std::unique_ptr<KeyValueStore> store, int rank, int world_size,
                               std::string where, absl::Duration every,
                               absl::Duration store_deadline)
    : shared_(std::make_shared<Shared>(std::move(store))),
      rank_(rank),
      world_size_(world_size),
      where_(std::move(where)),
      every_(every),
      store_deadline_(store_deadline) {
  // Detached: it owns `shared`, and may be stuck in a store call when the trainer ends.
  std::thread([shared = shared_, rank, every] {
    int64_t count = 0;
    while (true) {
      {
        // A failed write is retried at the next beat.
        absl::MutexLock lock(&shared->call_mu);
        (void)shared->store->Set(Key(rank), absl::StrCat(++count));
      }
      absl::MutexLock lock(&shared->mu);
      if (shared->mu.AwaitWithTimeout(absl::Condition(&shared->stop), every)) return;
    }
  }).detach();
}

RankHeartbeats::~RankHeartbeats() {
  absl::MutexLock lock(&shared_->mu);
  shared_->stop = true;
}

std::string RankHeartbeats::Key(int rank) { return absl::StrCat("graphshard/heartbeat/", rank); }

std::string RankHeartbeats::DiagnoseLoss() {
  const absl::Duration window = every_ * 2.5;
  const std::string unreachable = absl::StrCat(
      "the rendezvous store at ", where_, " (hosted by rank 0) is unreachable: rank 0 is lost (");
  // A beat in flight may hold the connection for up to one store call: twice the deadline.
  absl::StatusOr<std::vector<int64_t>> before =
      ReadCountsWithin(shared_, rank_, world_size_, store_deadline_ * 2);
  if (!before.ok()) return absl::StrCat(unreachable, before.status().message(), ")");
  absl::SleepFor(window);
  absl::StatusOr<std::vector<int64_t>> after =
      ReadCountsWithin(shared_, rank_, world_size_, store_deadline_ * 2);
  if (!after.ok()) return absl::StrCat(unreachable, after.status().message(), ")");
  std::vector<int> lost;
  for (int r = 0; r < world_size_; ++r) {
    if (r != rank_ && (*after)[static_cast<size_t>(r)] == (*before)[static_cast<size_t>(r)]) {
      lost.push_back(r);
    }
  }
  if (lost.empty()) {
    return absl::StrCat(
        "every other rank still beats (a late rank, or the network between "
        "ranks failed)");
  }
  return absl::StrCat("lost rank(s): ", absl::StrJoin(lost, ", "), " of ", world_size_,
                      " (no heartbeat in the rendezvous store for ", absl::FormatDuration(window),
                      ")");
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

}  // namespace graphshard::client
