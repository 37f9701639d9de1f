#include "client/epoch_plan.h"

#include <algorithm>
#include <numeric>

#include "gtest/gtest.h"

namespace graphshard::client {
namespace {

TEST(NaturalBatches, RoundsUp) {
  EXPECT_EQ(NaturalBatches(10, 4), 3);
  EXPECT_EQ(NaturalBatches(8, 4), 2);
  EXPECT_EQ(NaturalBatches(0, 4), 0);
}

TEST(ScheduleEpoch, InterleavesStreamsInProportionAndCoversEveryBatch) {
  const std::vector<int64_t> natural = {4, 2};
  EpochSchedule s = ScheduleEpoch(natural, 6);
  EXPECT_EQ(s.stream_batches, natural);
  EXPECT_EQ(s.step_stream, (std::vector<int>{0, 1, 0, 0, 1, 0}));
}

TEST(ScheduleEpoch, SurplusStepsGoToTheFirstStreamWithBatches) {
  const std::vector<int64_t> natural = {0, 3, 2};
  EpochSchedule s = ScheduleEpoch(natural, 8);
  EXPECT_EQ(s.stream_batches, (std::vector<int64_t>{0, 6, 2}));
  ASSERT_EQ(s.step_stream.size(), 8u);
  EXPECT_EQ(std::count(s.step_stream.begin(), s.step_stream.end(), 1), 6);
  EXPECT_EQ(std::count(s.step_stream.begin(), s.step_stream.end(), 2), 2);
}

TEST(ScheduleEpoch, NoSeedsMeansStepsWithoutBatches) {
  EpochSchedule s = ScheduleEpoch(std::vector<int64_t>{0}, 3);
  EXPECT_EQ(s.step_stream, (std::vector<int>{-1, -1, -1}));
}

TEST(BatchesBefore, CountsEachStreamsBatchesBeforeAStep) {
  EpochSchedule s = ScheduleEpoch(std::vector<int64_t>{4, 2}, 6);  // 0 1 0 0 1 0
  EXPECT_EQ(BatchesBefore(s, 0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(BatchesBefore(s, 3), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(BatchesBefore(s, 6), (std::vector<int64_t>{4, 2}));
}

TEST(StepSeed, DependsOnEveryInput) {
  const uint64_t base = StepSeed(1, 2, 3, 4);
  EXPECT_EQ(base, StepSeed(1, 2, 3, 4));
  EXPECT_NE(base, StepSeed(2, 2, 3, 4));
  EXPECT_NE(base, StepSeed(1, 3, 3, 4));
  EXPECT_NE(base, StepSeed(1, 2, 4, 4));
  EXPECT_NE(base, StepSeed(1, 2, 3, 5));
  EXPECT_LT(base, uint64_t{1} << 63);
  EXPECT_NE(StreamShuffleSeed(1, 0), StreamShuffleSeed(1, 1));
}

TEST(Fnv1a64, MatchesReferenceValues) {
  Fnv1a64 empty;
  EXPECT_EQ(empty.Hex(), "cbf29ce484222325");
  Fnv1a64 a;
  a.Update("a", 1);
  EXPECT_EQ(a.Hex(), "af63dc4c8601ec8c");
  Fnv1a64 split;  // incremental == one shot
  split.Update("foo", 3);
  split.Update("bar", 3);
  Fnv1a64 whole;
  whole.Update("foobar", 6);
  EXPECT_EQ(split.value(), whole.value());
  EXPECT_EQ(whole.Hex(), "85944171f73967e8");
}

}  // namespace
}  // namespace graphshard::client
