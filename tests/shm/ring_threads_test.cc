// The ring protocol under threads, as a server and a trainer run it: two builder threads fill
// segments (ShmRing::Acquire), a sender marks them sent in batch order and waits for the
// reader when it holds too many (back-pressure through WaitForReader), a reader thread opens
// them (ShmRingReader::Open) and a consumer thread holds and drops the leases (the release
// runs on the consumer's thread). Queues between the threads are std::mutex + condition
// variables (the "wire"). Run under ThreadSanitizer in CI (docs/DEVELOPERS.md): the writer's
// and the reader's mappings of one segment are different addresses to TSan, so the bytes are
// checked here instead: a batch must read back intact for as long as its lease is held.
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "shm/ring.h"

namespace graphshard::shm {
namespace {

constexpr int kBatches = 120;
constexpr int kBuilders = 2;
constexpr int64_t kMaxHeld = 3;  // segments the reader may hold before the sender waits
constexpr auto kWait = std::chrono::seconds(20);

std::string Prefix() { return "/graphshard-" + std::to_string(::getpid()) + "-ringthreads-"; }

int Leftovers() {
  const std::string prefix = Prefix().substr(1);
  int n = 0;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  while (dirent* e = ::readdir(dir)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
  ::closedir(dir);
  return n;
}

size_t BatchBytes(int i) { return 4096 * static_cast<size_t>(1 + i % 5); }
char Pattern(int i, size_t j) { return static_cast<char>((i * 131 + static_cast<int>(j)) & 0xff); }
bool Intact(const char* data, int i) {
  for (size_t j = 0; j < BatchBytes(i); ++j) {
    if (data[j] != Pattern(i, j)) return false;
  }
  return true;
}

// A blocking queue with a deadline on every wait; Pop returns nullopt on timeout or close.
template <typename T>
class Channel {
 public:
  void Push(T value) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(std::move(value));
    }
    cv_.notify_all();
  }
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  std::optional<T> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, kWait, [&] { return !items_.empty() || closed_; })) {
      return std::nullopt;
    }
    if (items_.empty()) return std::nullopt;
    T value = std::move(items_.front());
    items_.pop_front();
    return value;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;
  bool closed_ = false;
};

struct Sent {
  std::string name;
  int batch = 0;
};
struct Held {
  std::shared_ptr<const ShmSegment> lease;
  int batch = 0;
};

TEST(ShmRingThreadsTest, BuildersSenderReaderAndConsumerStreamEveryBatchIntact) {
  std::atomic<int64_t> counter{0};
  std::atomic<int> failures{0};
  std::atomic<int> reused_count{0};
  ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
  ShmRingReader reader;
  reader.Attach(ring.serial());

  // Builders -> sender: built batches by index; a builder runs at most 3 batches ahead of the
  // sender (as a stream's prefetch window).
  std::mutex built_mu;
  std::condition_variable built_cv;
  std::map<int, std::shared_ptr<ShmSegment>> built;
  int next_send = 0;
  std::vector<std::thread> builders;
  for (int t = 0; t < kBuilders; ++t) {
    builders.emplace_back([&, t] {
      for (int i = t; i < kBatches; i += kBuilders) {
        {
          std::unique_lock<std::mutex> lock(built_mu);
          if (!built_cv.wait_for(lock, kWait, [&] { return i - next_send < 3; })) {
            ++failures;
            return;
          }
        }
        bool reused = false;
        auto segment = ring.Acquire(BatchBytes(i), &reused);
        if (!segment.ok()) {
          ADD_FAILURE() << segment.status();
          ++failures;
          return;
        }
        reused_count += reused;
        for (size_t j = 0; j < BatchBytes(i); ++j) (*segment)->data()[j] = Pattern(i, j);
        {
          std::lock_guard<std::mutex> lock(built_mu);
          built[i] = std::move(*segment);
        }
        built_cv.notify_all();
      }
    });
  }

  Channel<Sent> wire;
  Channel<Held> consumed;
  std::thread sender([&] {
    ShmRing::ReaderHold hold = ring.HeldByReader();
    for (int i = 0; i < kBatches; ++i) {
      std::shared_ptr<ShmSegment> segment;
      {
        std::unique_lock<std::mutex> lock(built_mu);
        if (!built_cv.wait_for(lock, kWait, [&] { return built.count(i) > 0; })) {
          ADD_FAILURE() << "batch " << i << " never built";
          ++failures;
          break;
        }
        segment = std::move(built[i]);
        built.erase(i);
        next_send = i + 1;
      }
      built_cv.notify_all();
      const absl::Time deadline = absl::Now() + absl::Seconds(20);
      while ((hold = ring.HeldByReader()).held >= kMaxHeld && absl::Now() < deadline) {
        hold = ring.WaitForReader(hold, deadline);
      }
      if (hold.held >= kMaxHeld) {
        ADD_FAILURE() << "the reader never released a segment";
        ++failures;
        break;
      }
      ring.MarkSent(segment->name());
      wire.Push({segment->name(), i});
    }
    wire.Close();
  });

  std::thread reading([&] {
    int expected = 0;
    while (std::optional<Sent> sent = wire.Pop()) {
      EXPECT_EQ(sent->batch, expected++);
      auto lease = reader.Open(sent->name, BatchBytes(sent->batch), ring.serial());
      if (!lease.ok()) {
        ADD_FAILURE() << lease.status();
        ++failures;
        break;
      }
      if (!Intact((*lease)->data(), sent->batch)) {
        ADD_FAILURE() << "batch " << sent->batch << " corrupt when opened";
        ++failures;
      }
      consumed.Push({std::move(*lease), sent->batch});
    }
    EXPECT_EQ(expected, kBatches);
    consumed.Close();
  });

  std::thread consumer([&] {
    // Holds the last two leases (a training step and the next batch), then drops the oldest:
    // its bytes must not have changed while it was held.
    std::deque<Held> holding;
    while (std::optional<Held> held = consumed.Pop()) {
      holding.push_back(std::move(*held));
      if (holding.size() > 2) {
        if (!Intact(holding.front().lease->data(), holding.front().batch)) {
          ADD_FAILURE() << "batch " << holding.front().batch << " overwritten while leased";
          ++failures;
        }
        holding.pop_front();
      }
    }
  });

  for (std::thread& t : builders) t.join();
  sender.join();
  reading.join();
  consumer.join();
  EXPECT_EQ(failures.load(), 0);
  // Reuse: the ring stays small (held by the reader + in the builders' hands + waiting).
  EXPECT_LE(ring.segments(), kMaxHeld + kBuilders + 3);
  EXPECT_GT(reused_count.load(), kBatches / 2);
  reader.Detach(ring.serial());
  EXPECT_EQ(Leftovers(), 0);
}

}  // namespace
}  // namespace graphshard::shm
