#include "common/bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace graphshard::common {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kI64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

TEST(RangeFitsTest, InsideAndAtTheEdges) {
  EXPECT_TRUE(RangeFits(0, 0, 0));
  EXPECT_TRUE(RangeFits(0, 10, 10));
  EXPECT_TRUE(RangeFits(10, 0, 10));
  EXPECT_TRUE(RangeFits(3, 7, 10));
  EXPECT_FALSE(RangeFits(3, 8, 10));
  EXPECT_FALSE(RangeFits(11, 0, 10));
  EXPECT_FALSE(RangeFits(0, 11, 10));
}

TEST(RangeFitsTest, NoWrapAroundNearTheLimits) {
  // offset + length wraps to a small number: a naive "offset + length <= size" accepts these.
  EXPECT_FALSE(RangeFits(kU64Max, 1, 100));
  EXPECT_FALSE(RangeFits(1, kU64Max, 100));
  EXPECT_FALSE(RangeFits(kU64Max - 5, 10, 100));
  EXPECT_FALSE(RangeFits(64, kU64Max - 63, 100));
  // int64 max as offset or length (proto int64 fields read as unsigned).
  EXPECT_FALSE(RangeFits(kI64Max, kI64Max, 100));
  EXPECT_FALSE(RangeFits(kI64Max + 1, kI64Max + 1, kU64Max));  // sum wraps to 0
  EXPECT_FALSE(RangeFits(static_cast<uint64_t>(int64_t{-1}), 2, 4096));
  // Huge but legal ranges.
  EXPECT_TRUE(RangeFits(kU64Max, 0, kU64Max));
  EXPECT_TRUE(RangeFits(0, kU64Max, kU64Max));
  EXPECT_TRUE(RangeFits(kI64Max, kI64Max + 1, kU64Max));
  EXPECT_FALSE(RangeFits(kI64Max, kI64Max + 2, kU64Max));
}

TEST(BytesTest, RoundTripAndBadLength) {
  const std::vector<int64_t> values = {0, -1, std::numeric_limits<int64_t>::max(), 42};
  const std::string bytes = ToBytes<int64_t>(values);
  ASSERT_EQ(bytes.size(), 32u);
  EXPECT_EQ(bytes[8], '\xff');  // little-endian -1
  absl::StatusOr<std::vector<int64_t>> back = FromBytes<int64_t>(bytes, "ids");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, values);
  absl::StatusOr<std::vector<int64_t>> bad = FromBytes<int64_t>(bytes.substr(1), "ids");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("ids: 31 bytes"), absl::string_view::npos);
  EXPECT_EQ(FromBytes<int64_t>("abc", "x", absl::StatusCode::kDataLoss).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_TRUE(FromBytes<int64_t>("", "empty")->empty());
}

}  // namespace
}  // namespace graphshard::common
