#include "server/engine/local_part.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "partitioner/partition.h"
#include "tests/server/test_cluster.h"

namespace graphshard::engine {
namespace {

constexpr int64_t kHub = 0;        // in-neighbours 1..20
constexpr int64_t kSmall = 21;     // in-neighbours 1..3
constexpr int64_t kHubDegree = 20;

class LocalPartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<int64_t> src, dst;
    for (int64_t v = 1; v <= kHubDegree; ++v) {
      src.push_back(v);
      dst.push_back(kHub);
    }
    for (int64_t v = 1; v <= 3; ++v) {
      src.push_back(v);
      dst.push_back(kSmall);
    }
    partitioner::Graph g = partitioner::HomogeneousGraph(22, std::move(src), std::move(dst));
    partitioner::NodeTypeData& nodes = g.node_types[0];
    nodes.feat_dim = 2;
    std::vector<float> features;
    for (int64_t v = 0; v < nodes.num_nodes; ++v) {
      features.push_back(static_cast<float>(v));
      features.push_back(-1.0f);
    }
    nodes.features = partitioner::Array<float>::Owned(std::move(features));
    nodes.labels = partitioner::Array<int64_t>::Owned(std::vector<int64_t>(22, 0));
    nodes.num_classes = 1;
    nodes.splits["train"] = partitioner::Array<int64_t>::Owned({0, 21});
    dir_ = testing::MakeTempDir();
    partitioner::PartitionOptions options;
    options.num_parts = 1;
    ASSERT_TRUE(partitioner::PartitionGraph(g, options, dir_ + "/p").ok());
    auto part = common::PartitionPart::Load(dir_ + "/p", 0);
    ASSERT_TRUE(part.ok()) << part.status();
    // One part keeps the input order, so global ids are the input ids.
    ASSERT_EQ((*part)->FindNodes("node")->orig_ids[kHub], kHub);
    Limits limits;
    limits.max_request_ids = 100;
    auto local = LocalPart::Create(*std::move(part), limits);
    ASSERT_TRUE(local.ok()) << local.status();
    local_ = *std::move(local);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  HopResult Sample(std::vector<int64_t> seeds, int fanout, bool replace, uint64_t seed) {
    OneHopRequest r{{HopItem{"node__to__node", std::move(seeds), fanout, seed}}, replace};
    auto result = local_->SampleOneHop(r);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? (*result)[0] : HopResult{};
  }

  std::string dir_;
  std::unique_ptr<LocalPart> local_;
};

TEST_F(LocalPartTest, WithoutReplacementGivesAtMostFanoutDistinctTrueNeighbours) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    HopResult r = Sample({kHub, kSmall}, 5, false, seed);
    ASSERT_EQ(r.counts, (std::vector<int64_t>{5, 3}));
    std::set<int64_t> hub(r.neighbors.begin(), r.neighbors.begin() + 5);
    EXPECT_EQ(hub.size(), 5u) << "repeated neighbour without replacement";
    for (int64_t n : hub) EXPECT_TRUE(n >= 1 && n <= kHubDegree) << n;
    std::set<int64_t> small(r.neighbors.begin() + 5, r.neighbors.end());
    EXPECT_EQ(small, (std::set<int64_t>{1, 2, 3}));
  }
}

TEST_F(LocalPartTest, WithReplacementDrawsExactlyFanout) {
  HopResult r = Sample({kHub, kSmall, 5}, 7, true, 3);
  EXPECT_EQ(r.counts, (std::vector<int64_t>{7, 7, 0}));  // node 5 has no in-edges
  for (size_t i = 0; i < 7; ++i) EXPECT_TRUE(r.neighbors[i] >= 1 && r.neighbors[i] <= 20);
  for (size_t i = 7; i < 14; ++i) EXPECT_TRUE(r.neighbors[i] >= 1 && r.neighbors[i] <= 3);
}

TEST_F(LocalPartTest, FanoutMinusOneReturnsAllNeighbours) {
  HopResult r = Sample({kHub}, -1, false, 0);
  std::vector<int64_t> want;
  for (int64_t v = 1; v <= kHubDegree; ++v) want.push_back(v);
  EXPECT_EQ(r.neighbors, want);
}

TEST_F(LocalPartTest, SameSeedSameDrawDifferentSeedDifferentDraw) {
  EXPECT_EQ(Sample({kHub}, 5, false, 11).neighbors, Sample({kHub}, 5, false, 11).neighbors);
  // The draw for a node does not depend on the other seeds in the request.
  EXPECT_EQ(Sample({kSmall, kHub}, 5, false, 11).neighbors.size(), 8u);
  std::vector<int64_t> alone = Sample({kHub}, 5, false, 11).neighbors;
  std::vector<int64_t> with = Sample({kSmall, kHub}, 5, false, 11).neighbors;
  EXPECT_TRUE(std::equal(alone.begin(), alone.end(), with.begin() + 3));
  EXPECT_NE(Sample({kHub}, 5, false, 11).neighbors, Sample({kHub}, 5, false, 12).neighbors);
}

// Each of the 20 neighbours should be picked with probability 5/20 per draw. Over 2000 fixed
// seeds the expected count is 500 each; chi-square with 19 degrees of freedom stays below
// 43.82 with probability 0.999 (false-alarm rate 0.1%), and the seeds are fixed, so the test is
// deterministic.
TEST_F(LocalPartTest, NeighbourChoiceIsUniformByChiSquare) {
  for (bool replace : {false, true}) {
    std::vector<double> observed(kHubDegree + 1, 0.0);
    const int trials = 2000;
    const int fanout = 5;
    for (int t = 0; t < trials; ++t) {
      for (int64_t n : Sample({kHub}, fanout, replace, 1000 + t).neighbors) observed[n] += 1;
    }
    const double expected = trials * fanout / static_cast<double>(kHubDegree);
    double chi2 = 0;
    for (int64_t v = 1; v <= kHubDegree; ++v) {
      chi2 += (observed[v] - expected) * (observed[v] - expected) / expected;
    }
    EXPECT_LT(chi2, 43.82) << (replace ? "with" : "without") << " replacement";
  }
}

TEST_F(LocalPartTest, BadRequestsAreInvalidArgument) {
  auto bad = [&](HopItem item) {
    auto result = local_->SampleOneHop(OneHopRequest{{std::move(item)}, false});
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
    return std::string(result.status().message());
  };
  const std::string e = "node__to__node";
  EXPECT_NE(bad({e, {kHub}, -2, 0}).find("fanout -2"), std::string::npos);
  EXPECT_NE(bad({e, {kHub}, 1 << 20, 0}).find("fanout"), std::string::npos);
  EXPECT_NE(bad({e, {22}, 5, 0}).find("seeds[0] = 22"), std::string::npos);
  EXPECT_NE(bad({e, {-1}, 5, 0}).find("not a 'node' node id"), std::string::npos);
  EXPECT_NE(bad({e, std::vector<int64_t>(101, kHub), 5, 0}).find("limit"), std::string::npos);
  EXPECT_NE(bad({"node__x__node", {kHub}, 5, 0}).find("unknown edge type"), std::string::npos);
  std::vector<TypedIds> ids = {{"node", {3, 99}}};
  auto gather = local_->GatherFeatures(ids, FeatureDtype::kFloat32);
  EXPECT_EQ(gather.status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<TypedIds> unknown = {{"paper", {3}}};
  EXPECT_EQ(local_->GatherFeatures(unknown, FeatureDtype::kFloat32).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(LocalPartTest, GatherFeaturesReturnsRowsInRequestOrder) {
  std::vector<TypedIds> ids = {{"node", {7, 2}}};
  auto rows = local_->GatherFeatures(ids, FeatureDtype::kFloat32);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<float> feat((*rows)[0].features.size() / 4);
  std::memcpy(feat.data(), (*rows)[0].features.data(), feat.size() * 4);
  EXPECT_EQ(feat, (std::vector<float>{7, -1, 2, -1}));
  EXPECT_EQ((*rows)[0].labels, (std::vector<int64_t>{0, 0}));
}

TEST_F(LocalPartTest, HalfPrecisionFeaturesRoundToNearest) {
  std::vector<TypedIds> ids = {{"node", {7}}};
  for (FeatureDtype dtype : {FeatureDtype::kFloat16, FeatureDtype::kBFloat16}) {
    auto rows = local_->GatherFeatures(ids, dtype);
    ASSERT_TRUE(rows.ok()) << rows.status();
    ASSERT_EQ((*rows)[0].features.size(), 4u);
    uint16_t h[2];
    std::memcpy(h, (*rows)[0].features.data(), 4);
    if (dtype == FeatureDtype::kFloat16) {
      EXPECT_EQ(h[0], 0x4700);  // 7.0 in IEEE half
      EXPECT_EQ(h[1], 0xbc00);  // -1.0
    } else {
      EXPECT_EQ(h[0], 0x40e0);  // 7.0 in bfloat16
      EXPECT_EQ(h[1], 0xbf80);
    }
  }
}

}  // namespace
}  // namespace graphshard::engine
