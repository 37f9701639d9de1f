#include "server/malloc_tuning.h"

#include <gtest/gtest.h>

namespace graphshard::server {
namespace {

TEST(MallocTunables, SetsBothThresholdsWhenTheEnvironmentHasNone) {
  EXPECT_EQ(MallocTunables(nullptr, 256),
            "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=536870912");
  EXPECT_EQ(MallocTunables("", 1),
            "glibc.malloc.mmap_threshold=1048576:glibc.malloc.trim_threshold=2097152");
}

TEST(MallocTunables, KeepsTheUsersOtherTunables) {
  EXPECT_EQ(MallocTunables("glibc.malloc.arena_max=4", 1),
            "glibc.malloc.arena_max=4:glibc.malloc.mmap_threshold=1048576:"
            "glibc.malloc.trim_threshold=2097152");
}

TEST(MallocTunables, LeavesThresholdsTheUserSetAndZeroAlone) {
  EXPECT_EQ(MallocTunables("glibc.malloc.mmap_threshold=65536", 256), "");
  EXPECT_EQ(MallocTunables("glibc.malloc.trim_threshold=65536", 256), "");
  EXPECT_EQ(MallocTunables(nullptr, 0), "");
}

}  // namespace
}  // namespace graphshard::server
