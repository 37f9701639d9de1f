// The engine over in-process parts (no gRPC) and a real server stream give the same batches:
// a batch is a pure function of (seeds, seed, epoch, batch index), whatever carries it.

#include <gtest/gtest.h>

#include <cstring>

#include "common/executor.h"
#include "server/engine/epoch_stream.h"
#include "server/proto_convert.h"
#include "tests/server/engine/in_process_parts.h"
#include "tests/server/test_cluster.h"

namespace graphshard::server {
namespace {

TEST(InProcessParityTest, StreamedBatchesEqualInProcessBatches) {
  partitioner::Graph cora = testing::ReadCora();
  testing::TestCluster cluster(cora, 2);
  auto parts = testing::LoadInProcessParts(cluster.partition_dir());
  ASSERT_TRUE(parts.ok()) << parts.status();
  auto peers = parts->Peers();
  const engine::LocalPart& local = *parts->parts[1];

  engine::StreamRequest e;
  const auto train = local.part().FindNodes("node")->splits.at("train");
  e.seeds.assign(train.begin(), train.end());
  e.batch_size = 16;
  e.shuffle_seed = 9;
  e.epoch = 4;
  e.sampling.fanouts = {5, 3};
  v1::StreamBatchesRequest r;
  r.set_seeds(ToBytes<int64_t>(e.seeds));
  r.set_batch_size(e.batch_size);
  r.set_shuffle(true);
  r.set_shuffle_seed(e.shuffle_seed);
  r.set_epoch(e.epoch);
  for (int32_t f : e.sampling.fanouts) r.mutable_sampling()->add_fanouts(f);

  common::InlineExecutor inline_executor;
  auto stream = engine::EpochStream::Start(local, *peers, inline_executor, e, /*prefetch=*/1);
  ASSERT_TRUE(stream.ok()) << stream.status();
  auto ctx = testing::Context();
  auto reader = cluster.Stub(1)->StreamBatches(ctx.get(), r);
  v1::Minibatch m;
  int64_t count = 0;
  while (reader->Read(&m)) {
    SCOPED_TRACE(::testing::Message() << "batch " << count);
    auto mine = (*stream)->Next();
    ASSERT_TRUE(mine.ok()) << mine.status();
    ASSERT_TRUE(mine->has_value()) << "the server sent more batches";
    const engine::Minibatch& want = **mine;
    testing::Decoded got = testing::Decode(m);
    EXPECT_EQ(got.batch_size, want.batch_size);
    for (const engine::NodeBlock& n : want.nodes) {
      const testing::DecodedBlock& g = got.nodes[n.node_type];
      EXPECT_EQ(g.ids, n.ids) << n.node_type;
      EXPECT_EQ(g.labels, n.labels) << n.node_type;
      EXPECT_EQ(g.num_sampled, n.num_sampled_nodes) << n.node_type;
      const auto f = n.FeatureData();
      ASSERT_EQ(g.features.size(), f.size()) << n.node_type;
      EXPECT_EQ(std::memcmp(g.features.data(), f.data(), f.size()), 0) << n.node_type;
    }
    for (const engine::EdgeBlock& b : want.edges) {
      const testing::DecodedEdges& g = got.edges[b.edge_type];
      EXPECT_EQ(g.src, b.src) << b.edge_type;
      EXPECT_EQ(g.dst, b.dst) << b.edge_type;
      EXPECT_EQ(g.num_sampled, b.num_sampled_edges) << b.edge_type;
    }
    ++count;
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(count, (*stream)->num_batches());
  auto end = (*stream)->Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value()) << "the server sent fewer batches";
}

}  // namespace
}  // namespace graphshard::server
