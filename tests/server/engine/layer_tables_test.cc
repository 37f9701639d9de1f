// Layer tables (full-graph inference) over in-process parts: what is put is what a block built
// over the table carries, for rows of this part and of the peer alike; every refusal names
// what is wrong.

#include "server/engine/layer_tables.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "common/executor.h"
#include "server/engine/epoch_stream.h"
#include "server/engine/in_process_peers.h"
#include "server/engine/minibatch_builder.h"
#include "tests/server/engine/in_process_parts.h"

namespace graphshard::engine {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kDim = 3;

// Row of node `id` in table `table`: values nobody could get from the features.
float Value(uint64_t table, int64_t id, int64_t c) {
  return static_cast<float>(table) * 1000.0f + static_cast<float>(id) + 0.25f * static_cast<float>(c);
}

class LayerTablesTest : public testing::InProcessTwoPartsTest {
 protected:
  void SetUp() override {
    InProcessTwoPartsTest::SetUp();
    if (HasFatalFailure()) return;
    for (const auto& p : parts_.parts) tables_.push_back(std::make_unique<LayerTables>(*p));
  }
  std::vector<int64_t> Owned(int part) const {
    const common::NodeShard& own = *parts_.parts[part]->part().FindNodes("node");
    std::vector<int64_t> ids;
    for (int64_t id = own.begin; id < own.end; ++id) ids.push_back(id);
    return ids;
  }
  absl::StatusOr<int64_t> PutAll(int part, uint64_t table) {
    std::vector<int64_t> ids = Owned(part);
    std::vector<float> rows;
    for (int64_t id : ids) {
      for (int64_t c = 0; c < kDim; ++c) rows.push_back(Value(table, id, c));
    }
    return tables_[part]->Put(table, "", kDim, ids, rows);
  }
  std::vector<std::unique_ptr<LayerTables>> tables_;
};

TEST_F(LayerTablesTest, BlockOverTableCarriesThePutRowsOfEveryPart) {
  ASSERT_EQ(*PutAll(0, 7), 0);
  ASSERT_EQ(*PutAll(1, 7), 0);
  absl::StatusOr<std::shared_ptr<const LocalPart>> view = tables_[0]->View(7);
  ASSERT_TRUE(view.ok()) << view.status();
  InProcessPeers base({parts_.parts[0].get(), parts_.parts[1].get()},
                      {tables_[0].get(), tables_[1].get()});
  TablePeers peers(base, 7);
  MinibatchRequest r;
  r.seeds = own_seeds();
  r.sampling.fanouts = {-1};
  absl::StatusOr<Minibatch> batch = BuildMinibatch(**view, peers, r);
  ASSERT_TRUE(batch.ok()) << batch.status();
  const NodeBlock& block = batch->nodes[0];
  ASSERT_EQ(block.feat_dim, kDim);
  const common::PartitionBook& book = *local().node_types()[0].book;
  bool remote = false;
  for (size_t j = 0; j < block.ids.size(); ++j) {
    remote = remote || book.Owner(block.ids[j]) != 0;
    for (int64_t c = 0; c < kDim; ++c) {
      float got;
      std::memcpy(&got, block.FeatureData().data() + (j * kDim + static_cast<size_t>(c)) * 4, 4);
      EXPECT_EQ(got, Value(7, block.ids[j], c)) << "node " << block.ids[j];
    }
  }
  EXPECT_TRUE(remote) << "the block should reach the other part";
  // The same block over the features: same nodes, edges and labels.
  absl::StatusOr<Minibatch> features = BuildMinibatch(local(), base, r);
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_EQ(features->nodes[0].ids, block.ids);
  EXPECT_EQ(features->nodes[0].labels, block.labels);
  EXPECT_EQ(features->edges[0].src, batch->edges[0].src);
}

TEST_F(LayerTablesTest, ReadingNeedsEveryRowAndSealsTheTable) {
  std::vector<int64_t> ids = Owned(0);
  std::vector<float> one(kDim, 1.0f);
  absl::StatusOr<int64_t> missing = tables_[0]->Put(3, "node", kDim, {ids[0]}, one);
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(*missing, std::ssize(ids) - 1);
  absl::Status early = tables_[0]->View(3).status();
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(early.message(), HasSubstr(absl::StrCat(ids.size() - 1, " of ", ids.size())));
  ASSERT_TRUE(PutAll(0, 3).ok());
  ASSERT_TRUE(tables_[0]->View(3).ok());
  absl::Status late = tables_[0]->Put(3, "", kDim, {ids[0]}, one).status();
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition) << late;
  EXPECT_THAT(late.message(), HasSubstr("being read"));
}

TEST_F(LayerTablesTest, RefusesBadPutsNamingWhat) {
  std::vector<int64_t> own = Owned(0);
  std::vector<int64_t> foreign = Owned(1);
  std::vector<float> row(kDim, 0.0f);
  auto code = [](const absl::StatusOr<int64_t>& s) { return s.status().code(); };
  EXPECT_EQ(code(tables_[0]->Put(0, "", kDim, {own[0]}, row)), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tables_[0]->Put(1, "", kDim, {foreign[0]}, row).status().message(),
              HasSubstr("owned by part 1"));
  EXPECT_THAT(tables_[0]->Put(1, "paper", kDim, {own[0]}, row).status().message(),
              HasSubstr("unknown node type 'paper'"));
  EXPECT_THAT(tables_[0]->Put(1, "", kDim + 1, {own[0]}, row).status().message(),
              HasSubstr("values for 1 ids of dim 4"));
  ASSERT_TRUE(tables_[0]->Put(1, "", kDim, {own[0]}, row).ok());
  std::vector<float> wide(kDim + 1, 0.0f);
  EXPECT_THAT(tables_[0]->Put(1, "", kDim + 1, {own[1]}, wide).status().message(),
              HasSubstr("earlier rows had dim 3"));
  EXPECT_EQ(tables_[0]->View(99).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(LayerTablesTest, DropForgetsTheTableButNotAViewInUse) {
  ASSERT_TRUE(PutAll(0, 5).ok());
  absl::StatusOr<std::shared_ptr<const LocalPart>> view = tables_[0]->View(5);
  ASSERT_TRUE(view.ok());
  tables_[0]->Drop(5);
  tables_[0]->Drop(5);  // twice: nothing
  EXPECT_EQ(tables_[0]->View(5).status().code(), absl::StatusCode::kNotFound);
  // The view still reads its rows.
  absl::StatusOr<std::vector<FeatureBlock>> rows =
      (*view)->GatherFeatures({{"node", {Owned(0)[0]}}}, FeatureDtype::kFloat32);
  ASSERT_TRUE(rows.ok()) << rows.status();
  float first;
  std::memcpy(&first, (*rows)[0].features.data(), 4);
  EXPECT_EQ(first, Value(5, Owned(0)[0], 0));
}

// Holds posted work until RunAll: jobs that outlive the stream that posted them.
class DeferredExecutor final : public common::Executor {
 public:
  void Post(std::function<void()> work) override { queue_.push_back(std::move(work)); }
  void RunAll() {
    for (auto& work : queue_) work();
    queue_.clear();
  }

 private:
  std::vector<std::function<void()>> queue_;
};

TEST_F(LayerTablesTest, StreamOverTableReadsItsRowsAfterTheTableIsDropped) {
  ASSERT_EQ(*PutAll(0, 7), 0);
  ASSERT_EQ(*PutAll(1, 7), 0);
  InProcessPeers base({parts_.parts[0].get(), parts_.parts[1].get()},
                      {tables_[0].get(), tables_[1].get()});
  absl::StatusOr<std::shared_ptr<const LocalPart>> view = tables_[0]->View(7);
  ASSERT_TRUE(view.ok()) << view.status();
  common::InlineExecutor executor;
  StreamRequest r;
  r.seeds = own_seeds();
  r.batch_size = 2;
  r.sampling.fanouts = {-1};
  auto stream = EpochStream::Start(std::make_shared<TableSource>(*std::move(view), base, 7),
                                   executor, r, /*prefetch=*/1);
  ASSERT_TRUE(stream.ok()) << stream.status();
  tables_[0]->Drop(7);  // the batches after the first are built after this
  int batches = 0;
  while (true) {
    absl::StatusOr<std::optional<Minibatch>> next = (*stream)->Next();
    ASSERT_TRUE(next.ok()) << next.status();
    if (!next->has_value()) break;
    ++batches;
    const NodeBlock& block = (*next)->nodes[0];
    ASSERT_EQ(block.feat_dim, kDim);
    for (size_t j = 0; j < block.ids.size(); ++j) {
      float got;
      std::memcpy(&got, block.FeatureData().data() + j * kDim * 4, 4);
      EXPECT_EQ(got, Value(7, block.ids[j], 0)) << "node " << block.ids[j];
    }
  }
  EXPECT_EQ(batches, (std::ssize(r.seeds) + 1) / 2);
}

TEST_F(LayerTablesTest, TableStreamJobsHoldTheirSourceUntilTheyFinish) {
  ASSERT_EQ(*PutAll(0, 7), 0);
  ASSERT_EQ(*PutAll(1, 7), 0);
  InProcessPeers base({parts_.parts[0].get(), parts_.parts[1].get()},
                      {tables_[0].get(), tables_[1].get()});
  absl::StatusOr<std::shared_ptr<const LocalPart>> view = tables_[0]->View(7);
  ASSERT_TRUE(view.ok()) << view.status();
  auto source = std::make_shared<TableSource>(*std::move(view), base, 7);
  const std::weak_ptr<TableSource> watch = source;
  DeferredExecutor executor;
  StreamRequest r;
  r.seeds = own_seeds();
  r.batch_size = 2;
  r.sampling.fanouts = {-1};
  auto stream = EpochStream::Start(std::move(source), executor, r, /*prefetch=*/2);
  ASSERT_TRUE(stream.ok()) << stream.status();
  stream->reset();  // the stream goes first, its jobs not run yet
  tables_[0]->Drop(7);
  EXPECT_FALSE(watch.expired()) << "the posted jobs hold the table's view and peers";
  executor.RunAll();
  EXPECT_TRUE(watch.expired()) << "the last job lets them go";
}

TEST_F(LayerTablesTest, HoldsAtMostMaxTables) {
  LayerTables small(local(), {.max_tables = 2});
  std::vector<float> row(kDim, 0.0f);
  const int64_t id = Owned(0)[0];
  ASSERT_TRUE(small.Put(1, "", kDim, {id}, row).ok());
  ASSERT_TRUE(small.Put(2, "", kDim, {id}, row).ok());
  EXPECT_EQ(small.Put(3, "", kDim, {id}, row).status().code(),
            absl::StatusCode::kResourceExhausted);
  small.Drop(1);
  EXPECT_TRUE(small.Put(3, "", kDim, {id}, row).ok());
}

}  // namespace
}  // namespace graphshard::engine
