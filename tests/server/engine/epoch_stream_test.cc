// Epoch streams over in-process parts (InProcessPeers) on an inline executor: every batch is
// built on the reader's thread, in order, with no gRPC and no thread pool, so a failure points
// at the engine alone.

#include "server/engine/epoch_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <utility>

#include "common/executor.h"
#include "server/engine/minibatch_builder.h"
#include "tests/server/engine/in_process_parts.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::engine {
namespace {

using ::testing::HasSubstr;

class EpochStreamTest : public testing::InProcessTwoPartsTest {
 protected:
  // Part 0's own nodes in batches of 2, shuffled, over `epochs` epochs from epoch 3.
  StreamRequest Request(int64_t epochs = 1) const {
    StreamRequest r;
    r.seeds = own_seeds();
    r.batch_size = 2;
    r.shuffle_seed = 5;
    r.epoch = 3;
    r.num_epochs = epochs;
    r.sampling.fanouts = {2, -1};
    return r;
  }
  absl::StatusOr<std::unique_ptr<EpochStream>> Start(StreamRequest r) {
    return EpochStream::Start(local(), *counting_, executor_, std::move(r), /*prefetch=*/2);
  }
  // Every batch of the stream with its (epoch, index).
  struct Numbered {
    int64_t epoch, index;
    Minibatch batch;
  };
  std::vector<Numbered> ReadAll(EpochStream& stream) {
    std::vector<Numbered> out;
    while (true) {
      const int64_t epoch = stream.next_epoch(), index = stream.next_index();
      auto next = stream.Next();
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok() || !next->has_value()) return out;
      out.push_back({epoch, index, **std::move(next)});
    }
  }

  common::InlineExecutor executor_;
};

TEST_F(EpochStreamTest, EachBatchIsThePureFunctionOfSeedEpochAndIndex) {
  const StreamRequest r = Request(/*epochs=*/2);
  auto stream = Start(r);
  ASSERT_TRUE(stream.ok()) << stream.status();
  std::vector<Numbered> got = ReadAll(**stream);
  const int64_t per_epoch = (*stream)->num_batches();
  ASSERT_EQ(per_epoch, (std::ssize(r.seeds) + 1) / 2);
  ASSERT_EQ(std::ssize(got), 2 * per_epoch);
  for (const Numbered& n : got) {
    SCOPED_TRACE(::testing::Message() << "epoch " << n.epoch << " batch " << n.index);
    MinibatchRequest one;
    one.seeds = BatchSeeds(ShuffledSeeds(r, n.epoch), r.batch_size, n.index);
    one.sampling = r.sampling;
    one.seed = BatchSamplingSeed(r, n.epoch, n.index);
    auto want = BuildMinibatch(local(), *peers_, one);
    ASSERT_TRUE(want.ok()) << want.status();
    testing::ExpectSameBatch(n.batch, *want);
  }
  EXPECT_EQ(got.front().epoch, 3);
  EXPECT_EQ(got.back().epoch, 4);
  EXPECT_GT(counting_->hops(1) + counting_->gathers(1), 0) << "remote hops reach part 1";
}

TEST_F(EpochStreamTest, ResumedStreamYieldsTheSameBatches) {
  auto whole = Start(Request());
  ASSERT_TRUE(whole.ok()) << whole.status();
  std::vector<Numbered> all = ReadAll(**whole);
  ASSERT_GE(all.size(), 3u);
  StreamRequest r = Request();
  r.first_batch = 1;
  auto resumed = Start(r);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  std::vector<Numbered> rest = ReadAll(**resumed);
  ASSERT_EQ(rest.size(), all.size() - 1);
  for (size_t i = 0; i < rest.size(); ++i) {
    EXPECT_EQ(rest[i].index, all[i + 1].index);
    testing::ExpectSameBatch(rest[i].batch, all[i + 1].batch);
  }
}

TEST_F(EpochStreamTest, BadRequestsAreInvalidArgumentAtStart) {
  const int64_t foreign = parts_.parts[1]->part().FindNodes("node")->begin;
  struct Case {
    const char* what;
    void (*edit)(StreamRequest&, int64_t foreign);
    const char* message;
  };
  const Case cases[] = {
      {"batch size 0", [](StreamRequest& r, int64_t) { r.batch_size = 0; }, "batch_size 0"},
      {"no seeds", [](StreamRequest& r, int64_t) { r.seeds.clear(); }, "empty seed shard"},
      {"foreign seed", [](StreamRequest& r, int64_t f) { r.seeds.push_back(f); },
       "owned by part 1"},
      {"repeated seed", [](StreamRequest& r, int64_t) { r.seeds.push_back(r.seeds[0]); },
       "appears twice"},
      {"unknown type", [](StreamRequest& r, int64_t) { r.seed_type = "paper"; },
       "unknown node type"},
      {"fanout -2", [](StreamRequest& r, int64_t) { r.sampling.fanouts[0] = -2; },
       "fanouts[0] = -2"},
      {"no epochs", [](StreamRequest& r, int64_t) { r.num_epochs = 0; }, "num_epochs 0"},
      {"first batch beyond", [](StreamRequest& r, int64_t) { r.first_batch = 99; },
       "first_batch 99"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    StreamRequest r = Request();
    c.edit(r, foreign);
    auto stream = Start(std::move(r));
    EXPECT_EQ(stream.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(stream.status().message()), HasSubstr(c.message));
  }
  EXPECT_EQ(counting_->total(), 0) << "nothing is built for a bad request";
}

TEST_F(EpochStreamTest, BuildErrorIsReturnedOnceAndEndsTheStream) {
  counting_->FailPart(1, absl::UnavailableError("peer down"));
  StreamRequest r = Request();
  r.sampling.fanouts = {-1, -1};
  auto stream = Start(r);
  ASSERT_TRUE(stream.ok()) << stream.status();
  absl::Status error;
  while (true) {
    auto next = (*stream)->Next();
    if (!next.ok()) {
      error = next.status();
      break;
    }
    ASSERT_TRUE(next->has_value()) << "the stream ended without reaching part 1";
  }
  EXPECT_EQ(error.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(error.message()), HasSubstr("part 1: peer down"));
  auto after = (*stream)->Next();
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->has_value());
}

}  // namespace
}  // namespace graphshard::engine
