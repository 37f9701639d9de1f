// Link prediction's Torch-free pieces (client/link_task.h): AUC from histograms against the
// exact pairwise AUC, MRR and Hits@K on known ranks, the reduction over ranks, the choice of
// the edge type with the errors that name what is missing, and the --task link flags.

#include "client/link_task.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "client/options.h"

namespace graphshard::client {
namespace {

using ::testing::HasSubstr;

double ExactAuc(const std::vector<float>& pos, const std::vector<float>& neg) {
  double wins = 0;
  for (float p : pos) {
    for (float n : neg) wins += p > n ? 1 : p == n ? 0.5 : 0;
  }
  return wins / static_cast<double>(pos.size() * neg.size());
}

TEST(LinkMetrics, HistogramAucMatchesThePairwiseAuc) {
  std::mt19937 rng(7);  // fixed seed
  std::normal_distribution<float> noise(0, 2);
  std::vector<float> pos, neg;
  for (int i = 0; i < 300; ++i) pos.push_back(1.5f + noise(rng));
  for (int i = 0; i < 900; ++i) neg.push_back(noise(rng));
  LinkEvalCounts c;
  AddLinkScores(pos, neg, 10, c);
  const LinkMetrics m = ComputeLinkMetrics(c);
  const double exact = ExactAuc(pos, neg);
  EXPECT_GT(exact, 0.6);
  EXPECT_LT(exact, 0.9);
  EXPECT_NEAR(m.auc, exact, 1e-3);
}

TEST(LinkMetrics, RanksEachPositiveAmongItsOwnNegatives) {
  // Two positives, three negatives each (negative j of positive i at j * 2 + i).
  const std::vector<float> pos = {2.0f, -1.0f};
  const std::vector<float> neg = {1.0f,  0.0f,    // j = 0
                                  3.0f,  0.5f,    // j = 1
                                  -5.0f, -1.0f};  // j = 2 (a tie for positive 1)
  LinkEvalCounts c;
  AddLinkScores(pos, neg, /*hits_k=*/2, c);
  const LinkMetrics m = ComputeLinkMetrics(c);
  // Positive 0: one negative above -> rank 2. Positive 1: two above, one tie -> rank 3.5.
  EXPECT_NEAR(m.mrr, (1.0 / 2 + 1.0 / 3.5) / 2, 1e-12);
  EXPECT_NEAR(m.hits, 0.5, 1e-12);
  // Right at 0: positive 0 (> 0); negatives -5 and -1 (<= 0) and 0.0 -> 4 of 8.
  EXPECT_NEAR(m.acc, 4.0 / 8, 1e-12);
}

class SumTwice final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  const char* name() const override { return "twice"; }
  absl::Status AllReduce(absl::Span<float>, ReduceOp) override { return absl::OkStatus(); }
  absl::Status AllReduce(absl::Span<double> data, ReduceOp) override {
    for (double& v : data) v *= 2;
    return absl::OkStatus();
  }
  absl::Status AllReduce(absl::Span<int64_t>, ReduceOp) override { return absl::OkStatus(); }
  absl::Status Broadcast(absl::Span<float>, int) override { return absl::OkStatus(); }
};

TEST(LinkMetrics, ReductionSumsEveryCount) {
  LinkEvalCounts c;
  AddLinkScores(std::vector<float>{1.0f}, std::vector<float>{0.5f, -2.0f}, 1, c);
  const LinkMetrics before = ComputeLinkMetrics(c);
  SumTwice comm;
  ASSERT_TRUE(ReduceLinkCounts(comm, c).ok());
  EXPECT_DOUBLE_EQ(c.total, 6);
  EXPECT_DOUBLE_EQ(c.ranked, 2);
  const LinkMetrics after = ComputeLinkMetrics(c);
  EXPECT_DOUBLE_EQ(after.auc, before.auc);
  EXPECT_DOUBLE_EQ(after.mrr, before.mrr);
}

ServerMetadata TwoEdgeTypes(bool with_splits) {
  ServerMetadata md;
  md.node_types = {{"user", 10, 0, 0}, {"movie", 5, 4, 0}};
  md.edge_types = {{"user__rates__movie", 0, 1, {}}, {"movie__rev_rates__user", 1, 0, {}}};
  if (with_splits) md.edge_types[0].split_sizes = {{"test", 2}, {"train", 8}, {"val", 1}};
  return md;
}

TEST(FindLinkEdgeType, NamesWhatIsMissing) {
  LinkOptions o;
  auto e = FindLinkEdgeType(o, TwoEdgeTypes(true));
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(e.status().message(), HasSubstr("--target-edge-type"));
  EXPECT_THAT(e.status().message(), HasSubstr("user__rates__movie"));
  o.target_edge_type = "user__likes__movie";
  EXPECT_THAT(FindLinkEdgeType(o, TwoEdgeTypes(true)).status().message(),
              HasSubstr("no such edge type"));
  o.target_edge_type = "user__rates__movie";
  e = FindLinkEdgeType(o, TwoEdgeTypes(false));
  EXPECT_THAT(e.status().message(), HasSubstr("--edge-split"));
  e = FindLinkEdgeType(o, TwoEdgeTypes(true));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(*e, 0);
}

constexpr ModelInfo kTestModels[] = {
    {"sage", Task::kNode, nullptr}, {"gcn", Task::kNode, nullptr}, {"gin", Task::kGraph, nullptr}};

absl::StatusOr<TrainerOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "graphshard-trainer");
  return ParseTrainerOptions(static_cast<int>(args.size()), args.data(), kTestModels);
}

TEST(ParseTrainerOptions, LinkTaskTakesSageAndItsFlags) {
  auto o =
      Parse({"--registry", "r", "--task", "link", "--target-edge-type", "a__b__c", "--neg-ratio",
             "3", "--neg-sampling", "degree", "--eval-neg-ratio", "50", "--hits-k", "20"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->task, Task::kLink);
  EXPECT_EQ(o->model, "sage");
  EXPECT_EQ(o->link.target_edge_type, "a__b__c");
  EXPECT_EQ(o->link.neg_ratio, 3);
  EXPECT_TRUE(o->link.degree_negatives);
  EXPECT_EQ(o->link.eval_neg_ratio, 50);
  EXPECT_EQ(o->link.hits_k, 20);
  EXPECT_THAT(Parse({"--registry", "r", "--task", "link", "--model", "gcn"}).status().message(),
              HasSubstr("--task link trains --model sage"));
  EXPECT_FALSE(Parse({"--registry", "r", "--task", "link", "--neg-sampling", "popular"}).ok());
  EXPECT_FALSE(Parse({"--registry", "r", "--task", "link", "--neg-ratio", "0"}).ok());
}

}  // namespace
}  // namespace graphshard::client
