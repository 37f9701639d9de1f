// ReadAheadStream over a scripted inner stream: order, the read-ahead bound, errors and the end
// passed on (and repeated), and cancellation of a reader blocked in the inner stream.
#include "client/read_ahead_stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace graphshard::client {
namespace {

// Hands out `script` in order (a batch is tagged by batch_index), then the end; counts its
// Next() calls. With `block_at` >= 0, the call of that index blocks until Cancel().
class ScriptedStream final : public BatchStream {
 public:
  ScriptedStream(std::vector<absl::StatusOr<int64_t>> script, std::atomic<int>* calls,
                 int block_at = -1)
      : script_(std::move(script)), calls_(calls), block_at_(block_at) {}

  absl::StatusOr<absl::optional<MinibatchData>> Next() override {
    const int i = calls_->fetch_add(1);
    if (i == block_at_) {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&cancelled_));
      return absl::CancelledError("scripted stream cancelled");
    }
    if (i >= static_cast<int>(script_.size())) return absl::optional<MinibatchData>();
    if (!script_[static_cast<size_t>(i)].ok()) return script_[static_cast<size_t>(i)].status();
    MinibatchData b;
    b.batch_index = *script_[static_cast<size_t>(i)];
    return absl::optional<MinibatchData>(std::move(b));
  }
  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }

 private:
  std::vector<absl::StatusOr<int64_t>> script_;
  std::atomic<int>* calls_;
  const int block_at_;
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// Waits up to 5 s for `calls` to reach `n`.
bool WaitForCalls(const std::atomic<int>& calls, int n) {
  for (int i = 0; i < 500 && calls.load() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return calls.load() >= n;
}

TEST(ReadAheadStreamTest, HandsOutBatchesInOrderThenTheEndAgain) {
  std::atomic<int> calls{0};
  ReadAheadStream s(std::make_unique<ScriptedStream>(
                        std::vector<absl::StatusOr<int64_t>>{10, 11, 12, 13, 14}, &calls),
                    2);
  for (int64_t want = 10; want <= 14; ++want) {
    absl::StatusOr<absl::optional<MinibatchData>> b = s.Next();
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE(b->has_value());
    EXPECT_EQ((*b)->batch_index, want);
  }
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<absl::optional<MinibatchData>> end = s.Next();
    ASSERT_TRUE(end.ok()) << end.status();
    EXPECT_FALSE(end->has_value());
  }
  EXPECT_EQ(calls.load(), 6);  // five batches and the end, nothing read past it
}

TEST(ReadAheadStreamTest, ReadsAtMostDepthAheadOfTheCaller) {
  std::atomic<int> calls{0};
  ReadAheadStream s(
      std::make_unique<ScriptedStream>(std::vector<absl::StatusOr<int64_t>>(20, 1), &calls), 3);
  ASSERT_TRUE(WaitForCalls(calls, 3));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(calls.load(), 3) << "read past its depth with nobody taking batches";
  ASSERT_TRUE(s.Next().ok());
  ASSERT_TRUE(WaitForCalls(calls, 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(calls.load(), 4);
}

TEST(ReadAheadStreamTest, PassesAnErrorOnInOrderAndStopsReading) {
  std::atomic<int> calls{0};
  ReadAheadStream s(std::make_unique<ScriptedStream>(
                        std::vector<absl::StatusOr<int64_t>>{
                            7, absl::DataLossError("minibatch edge src[3] is outside"), 8},
                        &calls),
                    4);
  absl::StatusOr<absl::optional<MinibatchData>> first = s.Next();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->batch_index, 7);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<absl::optional<MinibatchData>> bad = s.Next();
    EXPECT_TRUE(absl::IsDataLoss(bad.status())) << bad.status();
    EXPECT_NE(bad.status().message().find("outside"), std::string::npos);
  }
  EXPECT_EQ(calls.load(), 2) << "read past the error";
}

TEST(ReadAheadStreamTest, CancelReleasesAReaderBlockedInTheStream) {
  std::atomic<int> calls{0};
  auto s = std::make_unique<ReadAheadStream>(
      std::make_unique<ScriptedStream>(std::vector<absl::StatusOr<int64_t>>{1, 2}, &calls,
                                       /*block_at=*/1),
      4);
  ASSERT_TRUE(s->Next().ok());
  ASSERT_TRUE(WaitForCalls(calls, 2));  // the reader is blocked in the inner Next()
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s->Cancel();
  });
  absl::StatusOr<absl::optional<MinibatchData>> next = s->Next();  // waits for the cancel
  canceller.join();
  EXPECT_TRUE(absl::IsCancelled(next.status())) << next.status();
  s.reset();  // joins the reader: no hang
}

TEST(ReadAheadStreamTest, DestroyingItStopsABlockedReader) {
  std::atomic<int> calls{0};
  auto s = std::make_unique<ReadAheadStream>(
      std::make_unique<ScriptedStream>(std::vector<absl::StatusOr<int64_t>>{}, &calls,
                                       /*block_at=*/0),
      2);
  ASSERT_TRUE(WaitForCalls(calls, 1));
  s.reset();  // cancels the inner stream and joins
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace graphshard::client
