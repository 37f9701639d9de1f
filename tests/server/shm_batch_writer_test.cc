// ShmBatchWriter's back-pressure against a real ring and reader: the wait for the client to
// release a ring segment, its give-up and its cancellation. (Whole streams through the writer:
// stream_test.cc.)
#include "server/shm_batch_writer.h"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "shm/ring.h"
#include "tests/testing/wait_until.h"

namespace graphshard::server {
namespace {

std::string Prefix() { return "/graphshard-" + std::to_string(::getpid()) + "-writertest-"; }

class ShmBatchWriterTest : public ::testing::Test {
 protected:
  // A writer whose client holds at most one ring batch.
  std::unique_ptr<ShmBatchWriter> Writer() {
    return std::make_unique<ShmBatchWriter>(
        ShmBatchWriter::Options{.shared_memory = true, .ring_batches = 1, .ring_id = 0,
                                .rings = &rings_, .shm_prefix = Prefix(), .shm_counter = &counter_,
                                .stats = &stats_});
  }
  // A segment of the writer's ring, sent to the client (not opened yet); its name.
  std::string Send(ShmBatchWriter& writer) {
    auto segment = writer.ring()->Acquire(1000);
    EXPECT_TRUE(segment.ok()) << segment.status();
    const std::string name = (*segment)->name();
    writer.ring()->MarkSent(name);
    return name;
  }
  int64_t Stalls() {
    v1::Stats stats;
    stats_.Fill(&stats);
    return stats.shm_ring_stalls();
  }

  std::atomic<int64_t> counter_{0};
  RingRegistry rings_{Prefix(), &counter_, absl::Minutes(2), 8};
  ServerStats stats_;
  shm::ShmRingReader reader_;
};

TEST_F(ShmBatchWriterTest, RingWithRoomReturnsAtOnce) {
  auto writer = Writer();
  ASSERT_NE(writer->ring(), nullptr);
  EXPECT_TRUE(writer->WaitForRingRoom([] { return false; }).ok());
}

// The client releases its batch from another thread once the writer waits: the writer wakes
// then, not at the give-up (which would be DeadlineExceeded), and does not spin meanwhile (it
// asks about cancellation once per kCancelCheck at most, however long it waited).
TEST_F(ShmBatchWriterTest, ReleaseWakesTheWriterWithoutPolling) {
  auto writer = Writer();
  const std::string name = Send(*writer);
  auto lease = reader_.Open(name, 1000);
  ASSERT_TRUE(lease.ok()) << lease.status();
  std::atomic<int> checks{0};
  std::atomic<bool> released{false};
  std::thread client([&] {
    EXPECT_TRUE(testing::WaitUntil([&] { return checks.load() > 0; })) << "the writer never waited";
    released = true;
    lease->reset();
  });
  const absl::Time start = absl::Now();
  const absl::Status room = writer->WaitForRingRoom([&] {
    ++checks;
    return false;
  });
  const bool after_release = released.load();
  const absl::Duration waited = absl::Now() - start;
  client.join();
  EXPECT_TRUE(room.ok()) << room << ": it gave up instead of being woken";
  EXPECT_TRUE(after_release) << "the writer went on before the client released its batch";
  EXPECT_LE(checks.load(), waited / ShmBatchWriter::kCancelCheck + 4) << "waited " << waited;
  EXPECT_EQ(Stalls(), 0);
}

// A client with a batch it has not opened (a trainer evaluating between epochs) is waited for
// beyond the give-up; the second starts when it has opened everything.
TEST_F(ShmBatchWriterTest, UnopenedBatchIsWaitedForBeyondTheGiveUp) {
  auto writer = Writer();
  const std::string name = Send(*writer);
  std::atomic<bool> waiting{false}, opened{false};
  std::thread client([&] {
    EXPECT_TRUE(testing::WaitUntil([&] { return waiting.load(); })) << "the writer never waited";
    absl::SleepFor(ShmBatchWriter::kRingGiveUp + absl::Milliseconds(300));  // from its first check
    auto lease = reader_.Open(name, 1000);
    EXPECT_TRUE(lease.ok()) << lease.status();
    opened = true;
  });  // released when the thread's lease goes
  const absl::Time start = absl::Now();
  const absl::Status room = writer->WaitForRingRoom([&] {
    waiting = true;
    return false;
  });
  const bool after_open = opened.load();
  const absl::Duration waited = absl::Now() - start;
  client.join();
  EXPECT_TRUE(room.ok()) << room;
  EXPECT_TRUE(after_open) << "the writer went on before the client opened its batch";
  EXPECT_GE(waited, ShmBatchWriter::kRingGiveUp + absl::Milliseconds(300));
  EXPECT_EQ(Stalls(), 0);
}

// A client that opened every batch and still holds as many as it announced may be waiting for
// the next one: after kRingGiveUp the writer sends anyway (DeadlineExceeded, a stall).
TEST_F(ShmBatchWriterTest, ClientHoldingEveryOpenedBatchIsGivenUpOnAfterASecond) {
  auto writer = Writer();
  const std::string name = Send(*writer);
  auto lease = reader_.Open(name, 1000);
  ASSERT_TRUE(lease.ok()) << lease.status();
  const absl::Time start = absl::Now();
  const absl::Status room = writer->WaitForRingRoom([] { return false; });
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(room.code(), absl::StatusCode::kDeadlineExceeded) << room;
  EXPECT_GE(waited, ShmBatchWriter::kRingGiveUp);
  EXPECT_EQ(Stalls(), 1);
}

// A stream cancelled while its writer waits for a batch never opened (a wait as long as the
// stream): the writer returns Cancelled at the first check that sees it, after having checked
// while it waited.
TEST_F(ShmBatchWriterTest, CancelledStreamEndsTheWait) {
  auto writer = Writer();
  Send(*writer);  // never opened: the wait would last as long as the stream
  std::atomic<int> checks{0}, checks_after_cancel{0};
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    EXPECT_TRUE(testing::WaitUntil([&] { return checks.load() >= 2; })) << "no check while waiting";
    cancelled = true;
  });
  const absl::Status room = writer->WaitForRingRoom([&] {
    ++checks;
    if (!cancelled.load()) return false;
    ++checks_after_cancel;
    return true;
  });
  canceller.join();
  EXPECT_EQ(room.code(), absl::StatusCode::kCancelled) << room;
  EXPECT_EQ(checks_after_cancel.load(), 1) << "it went on waiting after a check saw the cancel";
  writer->ring()->UnlinkAll();  // the client never opened it
}

}  // namespace
}  // namespace graphshard::server
