#include "trainer/epoch_plan.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "gtest/gtest.h"

namespace graphshard::trainer {
namespace {

std::vector<ShardSeeds> TwoShards() {
  ShardSeeds a{0, std::vector<int64_t>(10)};
  std::iota(a.ids.begin(), a.ids.end(), 0);
  ShardSeeds b{3, std::vector<int64_t>(5)};
  std::iota(b.ids.begin(), b.ids.end(), 100);
  return {a, b};
}

TEST(PlanEpoch, BatchesNeverMixServersAndCoverEverySeedOnce) {
  std::vector<ShardSeeds> shards = TwoShards();
  std::vector<PlannedBatch> plan =
      PlanEpoch(shards, {.batch_size = 4, .shuffle = true, .seed = 7, .epoch = 2});
  EXPECT_EQ(plan.size(), 3u + 2u);  // ceil(10/4) + ceil(5/4)
  std::multiset<int64_t> seen;
  for (const PlannedBatch& b : plan) {
    EXPECT_LE(b.seeds.size(), 4u);
    for (int64_t id : b.seeds) {
      EXPECT_EQ(b.part, id < 100 ? 0 : 3);
      seen.insert(id);
    }
  }
  EXPECT_EQ(seen.size(), 15u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 15u);
}

TEST(PlanEpoch, DeterministicPerEpochAndDifferentAcrossEpochs) {
  std::vector<ShardSeeds> shards = TwoShards();
  auto flat = [&](int64_t epoch) {
    std::vector<int64_t> out;
    for (const PlannedBatch& b :
         PlanEpoch(shards, {.batch_size = 4, .shuffle = true, .seed = 1, .epoch = epoch})) {
      out.insert(out.end(), b.seeds.begin(), b.seeds.end());
    }
    return out;
  };
  EXPECT_EQ(flat(1), flat(1));
  EXPECT_NE(flat(1), flat(2));
}

TEST(PlanEpoch, WithoutShuffleKeepsOrder) {
  std::vector<ShardSeeds> shards = TwoShards();
  std::vector<PlannedBatch> plan =
      PlanEpoch(shards, {.batch_size = 8, .shuffle = false, .seed = 0, .epoch = 0});
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].seeds, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(plan[2].part, 3);
  EXPECT_EQ(plan[2].seeds.front(), 100);
}

TEST(PlanEpoch, EmptyShardsGiveNoBatches) {
  std::vector<ShardSeeds> shards = {{0, {}}};
  EXPECT_TRUE(PlanEpoch(shards, {.batch_size = 4, .shuffle = true, .seed = 0, .epoch = 0}).empty());
}

TEST(BatchForStep, WrapsAround) {
  EXPECT_EQ(BatchForStep(0, 3), 0);
  EXPECT_EQ(BatchForStep(4, 3), 1);
  EXPECT_EQ(BatchForStep(2, 0), -1);
}

TEST(BatchSampleSeed, DependsOnEveryInput) {
  const uint64_t base = BatchSampleSeed(1, 2, 3, 4, 0);
  EXPECT_EQ(base, BatchSampleSeed(1, 2, 3, 4, 0));
  EXPECT_NE(base, BatchSampleSeed(2, 2, 3, 4, 0));
  EXPECT_NE(base, BatchSampleSeed(1, 3, 3, 4, 0));
  EXPECT_NE(base, BatchSampleSeed(1, 2, 4, 4, 0));
  EXPECT_NE(base, BatchSampleSeed(1, 2, 3, 5, 0));
  EXPECT_NE(base, BatchSampleSeed(1, 2, 3, 4, 1));
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
}  // namespace graphshard::trainer
