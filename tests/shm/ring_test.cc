// ShmRing / ShmRingReader: the same-host stream ring. Real POSIX shared memory; writer and reader
// in one process, as a server and its trainer see it.
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "shm/ring.h"

namespace graphshard::shm {
namespace {

std::string Prefix() { return "/graphshard-" + std::to_string(::getpid()) + "-ringtest-"; }

// Names of this test's segments still in /dev/shm.
int Leftovers() {
  const std::string prefix = Prefix().substr(1);
  int n = 0;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  while (dirent* e = ::readdir(dir)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
  ::closedir(dir);
  return n;
}

TEST(ShmRingTest, ReleasedSegmentIsReusedAndHeldOneNever) {
  std::atomic<int64_t> counter{0};
  ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
  ShmRingReader reader;
  bool reused = true;
  auto a = ring.Acquire(1000, &reused);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(reused);
  std::memset((*a)->data(), 'a', 1000);
  const std::string name_a = (*a)->name();
  ring.MarkSent(name_a);
  a->reset();  // the server let go of it after sending

  // The reader holds batch A: a second batch gets a new segment, and A's bytes stay intact.
  auto lease_a = reader.Open(name_a, 1000);
  ASSERT_TRUE(lease_a.ok()) << lease_a.status();
  auto b = ring.Acquire(1000, &reused);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(reused);
  EXPECT_NE((*b)->name(), name_a);
  std::memset((*b)->data(), 'b', 1000);
  EXPECT_EQ((*lease_a)->data()[999], 'a');
  ring.MarkSent((*b)->name());
  b->reset();

  // A copy of the lease still holds it; dropping the last one releases A for the next batch.
  std::shared_ptr<const ShmSegment> copy = *lease_a;
  lease_a->reset();
  auto c = ring.Acquire(1000, &reused);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(reused) << "reused while a copy of the lease was alive";
  ring.MarkSent((*c)->name());
  c->reset();
  copy.reset();
  auto d = ring.Acquire(1000, &reused);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(reused);
  EXPECT_EQ((*d)->name(), name_a);
  EXPECT_EQ(ring.segments(), 3) << (*d)->name();

  // The reader maps A once: the name is gone, its mapping is reused, and it sees the new bytes.
  std::memset((*d)->data(), 'd', 1000);
  d->reset();
  auto again = reader.Open(name_a, 1000);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->data()[0], 'd');
  ring.UnlinkAll();
  EXPECT_EQ(Leftovers(), 0);
}

TEST(ShmRingTest, SegmentGrowsForALargerBatchAndTheReaderFollows) {
  std::atomic<int64_t> counter{0};
  ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
  ShmRingReader reader;
  auto small = ring.Acquire(4096);
  ASSERT_TRUE(small.ok());
  const std::string name = (*small)->name();
  const size_t capacity = (*small)->size();
  ring.MarkSent(name);
  small->reset();
  ASSERT_TRUE(reader.Open(name, 4096).ok());  // opened and released at once

  bool reused = false;
  auto big = ring.Acquire(capacity + 1, &reused);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_TRUE(reused);
  EXPECT_EQ((*big)->name(), name);
  ASSERT_GE((*big)->size(), capacity + 1);
  (*big)->data()[capacity] = 'z';
  big->reset();
  auto lease = reader.Open(name, capacity + 1);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ((*lease)->data()[capacity], 'z');
  ring.UnlinkAll();
}

// The writer tells a reader that has not read a sent batch yet (it is behind or pausing) from
// one that holds every batch it opened.
TEST(ShmRingTest, WriterSeesWhichSentSegmentsTheReaderOpened) {
  std::atomic<int64_t> counter{0};
  ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
  ShmRingReader reader;
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    auto s = ring.Acquire(100);
    ASSERT_TRUE(s.ok());
    names.push_back((*s)->name());
    ring.MarkSent(names.back());
  }
  EXPECT_EQ(ring.HeldByReader().held, 3);
  EXPECT_EQ(ring.HeldByReader().unopened, 3);
  auto first = reader.Open(names[0], 100);
  auto second = reader.Open(names[1], 100);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(ring.HeldByReader().held, 3);
  EXPECT_EQ(ring.HeldByReader().unopened, 1);
  first->reset();
  EXPECT_EQ(ring.HeldByReader().held, 2);
  EXPECT_EQ(ring.HeldByReader().unopened, 1);
  // Reused for the next batch: busy again, and unopened once sent.
  auto next = ring.Acquire(100);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ((*next)->name(), names[0]);
  ring.MarkSent(names[0]);
  EXPECT_EQ(ring.HeldByReader().held, 3);
  EXPECT_EQ(ring.HeldByReader().unopened, 2);
  ring.UnlinkAll();
}

TEST(ShmRingTest, SegmentsNeverSentAreUnlinkedWithTheRing) {
  std::atomic<int64_t> counter{0};
  std::string sent_name;
  {
    ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
    auto sent = ring.Acquire(100);
    auto unsent = ring.Acquire(100);  // built while the stream ended: no reader will see it
    ASSERT_TRUE(sent.ok() && unsent.ok());
    sent_name = (*sent)->name();
    ring.MarkSent(sent_name);
    EXPECT_EQ(ring.HeldByReader().held, 1);
    EXPECT_EQ(Leftovers(), 2);
  }
  EXPECT_EQ(Leftovers(), 1) << "the sent one is the reader's to unlink";
  EXPECT_EQ(sent_name, TaggedSegmentName(Prefix() + "0", "ring-test-key-0123456789"));
  ShmRingReader reader;
  EXPECT_TRUE(reader.Open(sent_name, 100).ok());  // opening unlinks it
  EXPECT_EQ(Leftovers(), 0);
}

TEST(ShmRingTest, SegmentDroppedUnsentIsReusedAndASentOneWaitsForTheReader) {
  std::atomic<int64_t> counter{0};
  ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
  bool reused = true;
  auto dropped = ring.Acquire(100, &reused);  // its batch was dropped before it was sent
  ASSERT_TRUE(dropped.ok());
  const std::string name = (*dropped)->name();
  auto held = ring.Acquire(100);  // still held by its builder: not free
  ASSERT_TRUE(held.ok());
  EXPECT_NE((*held)->name(), name);
  dropped->reset();
  auto again = ring.Acquire(100, &reused);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(reused);
  EXPECT_EQ((*again)->name(), name);
  ring.MarkSent(name);
  again->reset();
  auto next = ring.Acquire(100, &reused);  // sent and not released: not free
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(reused);
  EXPECT_EQ(ring.segments(), 3);
  ring.UnlinkAll();
  EXPECT_EQ(Leftovers(), 0);
}

TEST(ShmRingTest, ReaderKeepsSegmentsAcrossStreamsAndDropsThoseOfOtherRings) {
  std::atomic<int64_t> counter{0};
  ShmRingReader reader;
  ShmRing old_ring(Prefix(), &counter, "ring-test-key-0123456789");
  auto a = old_ring.Acquire(100);
  ASSERT_TRUE(a.ok());
  const std::string name_a = (*a)->name();
  old_ring.MarkSent(name_a);
  a->reset();
  // Stream 1 reads the old ring; stream 2 (same client) too, after stream 1 ended: the segment
  // is still mapped (its name is gone) and is read again without opening it.
  reader.Attach(old_ring.serial());
  ASSERT_TRUE(reader.Open(name_a, 100, old_ring.serial()).ok());
  reader.Detach(old_ring.serial());
  reader.Attach(old_ring.serial());
  EXPECT_EQ(reader.mapped(), 1);
  auto again = old_ring.Acquire(100);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->name(), name_a);
  old_ring.MarkSent(name_a);
  again->reset();
  EXPECT_TRUE(reader.Open(name_a, 100, old_ring.serial()).ok());

  // A newer ring while a stream still reads the old one: the old one's segments stay mapped;
  // once no stream reads it, attaching to a newer ring unmaps them.
  ShmRing new_ring(Prefix(), &counter, "ring-test-key-0123456789");
  ASSERT_GT(new_ring.serial(), old_ring.serial());
  reader.Attach(new_ring.serial());
  EXPECT_EQ(reader.mapped(), 1);
  reader.Detach(old_ring.serial());
  reader.Detach(new_ring.serial());
  reader.Attach(new_ring.serial());
  EXPECT_EQ(reader.mapped(), 0);

  // Any other ring counts, also one numbered lower (a restarted server numbers from 1 again).
  auto b = new_ring.Acquire(100);
  ASSERT_TRUE(b.ok());
  const std::string name_b = (*b)->name();
  new_ring.MarkSent(name_b);
  b->reset();
  ASSERT_TRUE(reader.Open(name_b, 100, new_ring.serial()).ok());
  EXPECT_EQ(reader.mapped(), 1);
  reader.Detach(new_ring.serial());
  reader.Attach(old_ring.serial());
  EXPECT_EQ(reader.mapped(), 0);
  old_ring.UnlinkAll();
  new_ring.UnlinkAll();
  EXPECT_EQ(Leftovers(), 0);
}

// The hooks a trainer uses to register segments with CUDA: called once per mapping, undone
// once the mapping goes (the last lease and the reader's entry gone).
TEST(ShmRingTest, MapHooksRegisterEachMappingOnceAndUndoItWhenItGoes) {
  std::atomic<int64_t> counter{0};
  ShmRingReader reader;
  std::vector<void*> mapped, unmapped;
  reader.SetMapHooks({.on_map = [&](void* base, size_t length) {
                        EXPECT_GE(length, kShmControlBytes + 100);
                        mapped.push_back(base);
                        return true;
                      },
                      .on_unmap = [&](void* base) { unmapped.push_back(base); }});
  ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
  auto s = ring.Acquire(100);
  ASSERT_TRUE(s.ok());
  const std::string name = (*s)->name();
  ring.MarkSent(name);
  s->reset();
  reader.Attach(ring.serial());
  auto lease = reader.Open(name, 100, ring.serial());
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_TRUE((*lease)->registered());
  lease->reset();
  auto again = ring.Acquire(100);
  ASSERT_TRUE(again.ok());
  ring.MarkSent(name);
  again->reset();
  auto second = reader.Open(name, 100, ring.serial());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(mapped.size(), 1u) << "mapped once, read twice";
  EXPECT_TRUE(unmapped.empty());
  // A newer ring: the old one's entry goes, its mapping with the last lease.
  reader.Detach(ring.serial());
  ShmRing newer(Prefix(), &counter, "ring-test-key-0123456789");
  reader.Attach(newer.serial());
  EXPECT_TRUE(unmapped.empty()) << "a lease still holds the mapping";
  second->reset();
  ASSERT_EQ(unmapped.size(), 1u);
  EXPECT_EQ(unmapped[0], mapped[0]);
  ring.UnlinkAll();
  EXPECT_EQ(Leftovers(), 0);
}

TEST(ShmRingTest, ReaderErrorsNameTheSegment) {
  ShmRingReader reader;
  auto missing = reader.Open(Prefix() + "missing", 10);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos);

  std::atomic<int64_t> counter{0};
  ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
  auto s = ring.Acquire(100);
  ASSERT_TRUE(s.ok());
  const std::string name = (*s)->name();
  auto too_big = reader.Open(name, (*s)->size() + 1);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(too_big.status().message().find(name), std::string::npos);
  ring.UnlinkAll();
  EXPECT_EQ(Leftovers(), 0);
}

// The writer's wait ends when the reader, in another process (as a trainer), releases the
// segment: it is woken through the shared control word, long before its deadline.
TEST(ShmRingTest, WaitForReaderWakesWhenAnotherProcessReleases) {
  std::atomic<int64_t> counter{0};
  ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
  auto a = ring.Acquire(1000);
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string name = (*a)->name();
  ring.MarkSent(name);
  a->reset();
  int opened[2];
  ASSERT_EQ(::pipe(opened), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    {
      ShmRingReader reader;
      auto lease = reader.Open(name, 1000);
      const char c = lease.ok() ? 'o' : 'x';
      if (::write(opened[1], &c, 1) != 1) ::_exit(2);
      ::usleep(300 * 1000);
    }  // the lease goes: released
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(opened[0], &c, 1), 1);
  ASSERT_EQ(c, 'o');
  const ShmRing::ReaderHold seen = ring.HeldByReader();
  EXPECT_EQ(seen.held, 1);
  EXPECT_EQ(seen.unopened, 0);
  const absl::Time start = absl::Now();
  const ShmRing::ReaderHold after = ring.WaitForReader(seen, start + absl::Seconds(20));
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(after.held, 0);
  EXPECT_LT(waited, absl::Seconds(10)) << "woken by the deadline, not by the release";
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(opened[0]);
  ::close(opened[1]);
  EXPECT_EQ(Leftovers(), 0);
}

// Without a change the wait lasts until its deadline; a change since `seen` returns at once.
TEST(ShmRingTest, WaitForReaderEndsAtTheDeadlineOrAtOnceOnAChangeSinceSeen) {
  std::atomic<int64_t> counter{0};
  ShmRing ring(Prefix(), &counter, "ring-test-key-0123456789");
  ShmRingReader reader;
  auto a = ring.Acquire(1000);
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string name = (*a)->name();
  ring.MarkSent(name);
  a->reset();
  const ShmRing::ReaderHold unopened = ring.HeldByReader();
  EXPECT_EQ(unopened.unopened, 1);
  absl::Time start = absl::Now();
  EXPECT_EQ(ring.WaitForReader(unopened, start + absl::Milliseconds(100)), unopened);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(100));

  auto lease = reader.Open(name, 1000);  // opened since `unopened` was seen
  ASSERT_TRUE(lease.ok()) << lease.status();
  start = absl::Now();
  const ShmRing::ReaderHold opened = ring.WaitForReader(unopened, start + absl::Seconds(20));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(opened.held, 1);
  EXPECT_EQ(opened.unopened, 0);
  lease->reset();
  EXPECT_EQ(ring.WaitForReader(opened, absl::Now() + absl::Seconds(20)).held, 0);
}

}  // namespace
}  // namespace graphshard::shm
