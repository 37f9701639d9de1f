// RingRegistry: which ring a client's stream gets, and when kept rings go.
#include "server/ring_registry.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include <gtest/gtest.h>

namespace graphshard::server {
namespace {

std::string Prefix() { return "/graphshard-" + std::to_string(::getpid()) + "-registrytest-"; }

TEST(RingRegistryTest, AClientGetsItsRingBackAndASecondStreamANewOne) {
  std::atomic<int64_t> counter{0};
  RingRegistry rings(Prefix(), &counter, absl::Minutes(2), 8);
  auto first = rings.Acquire(7);
  rings.Release(7, first, /*failed=*/false);
  auto again = rings.Acquire(7);
  EXPECT_EQ(again, first) << "the client's next stream reuses its ring";
  auto concurrent = rings.Acquire(7);  // the ring is in use: a new one, the client's from now on
  EXPECT_NE(concurrent, first);
  EXPECT_GT(concurrent->serial(), first->serial());
  rings.Release(7, again, false);       // the older ring is no longer the client's
  rings.Release(7, concurrent, false);
  EXPECT_EQ(rings.Acquire(7), concurrent);
  EXPECT_NE(rings.Acquire(8), concurrent) << "another client, another ring";
  auto alone = rings.Acquire(0);
  EXPECT_NE(rings.Acquire(0), alone) << "id 0: a ring per stream";
  EXPECT_EQ(rings.size(), 2);
}

TEST(RingRegistryTest, AFailedStreamDropsItsRing) {
  std::atomic<int64_t> counter{0};
  RingRegistry rings(Prefix(), &counter, absl::Minutes(2), 8);
  auto ring = rings.Acquire(7);
  rings.Release(7, ring, /*failed=*/true);
  EXPECT_EQ(rings.size(), 0);
  EXPECT_NE(rings.Acquire(7), ring);
}

TEST(RingRegistryTest, IdleRingsGoAfterTheIdleTimeAndBeyondTheBound) {
  std::atomic<int64_t> counter{0};
  {
    RingRegistry rings(Prefix(), &counter, absl::ZeroDuration(), 8);
    auto ring = rings.Acquire(7);
    rings.Release(7, ring, false);
    absl::SleepFor(absl::Milliseconds(5));
    EXPECT_NE(rings.Acquire(7), ring) << "idle longer than the idle time: dropped";
  }
  RingRegistry rings(Prefix(), &counter, absl::Minutes(2), /*max_idle_rings=*/2);
  for (uint64_t id = 1; id <= 4; ++id) {
    auto ring = rings.Acquire(id);
    rings.Release(id, ring, false);
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_EQ(rings.size(), 2) << "the two oldest idle rings went";
  auto in_use = rings.Acquire(4);  // kept: the newest
  auto oldest = rings.Acquire(1);  // dropped earlier: a new ring
  EXPECT_EQ(rings.size(), 3) << "rings in use do not count against the idle bound";
  rings.Release(4, in_use, false);
  rings.Release(1, oldest, false);
}

}  // namespace
}  // namespace graphshard::server
