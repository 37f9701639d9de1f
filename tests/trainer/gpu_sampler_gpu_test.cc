// The trainer's GPU sampler (--sampler gpu, trainer/gpu_sampler.h) against real in-process
// partition servers on Cora (2 parts): every batch it samples on the GPU is the batch the
// servers' epoch stream sends for the same shard, shuffle seed, epoch and batch (the same
// seeds, labels, rows in the same order, edges and hop counts), over whole epochs and
// wrapped-around batches, two epochs in one stream, from a resumed batch, with fanouts that
// take every neighbour, with replacement, and across both parts' shards. Label gpu: the GPU
// machine only (built where LibTorch has CUDA).

#include "trainer/gpu_sampler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "client/epoch_plan.h"
#include "client/graph_topology.h"
#include "client/server_set.h"
#include "tests/server/test_cluster.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {
namespace {

class GpuSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(torch::cuda::is_available()) << "this test needs a CUDA device (label gpu)";
    cluster_ = std::make_unique<graphshard::testing::TestCluster>(graphshard::testing::ReadCora(),
                                                                  2);
    client::DiscoveryOptions o;
    o.registry_dir = cluster_->registry_dir();
    o.server_wait_s = 10;
    auto set = client::ConnectServers(o);
    ASSERT_TRUE(set.ok()) << set.status();
    servers_ = std::make_unique<client::ServerSet>(*std::move(set));
    client_of_ = [this](int p) -> absl::StatusOr<client::PartitionClient*> {
      return servers_->clients[static_cast<size_t>(p)];
    };
    auto topology = client::ReadTopology(servers_->metadata, client_of_, 500);
    ASSERT_TRUE(topology.ok()) << topology.status();
    auto graph = GpuGraph::Create(*topology, torch::Device(torch::kCUDA, 0));
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = *graph;
  }

  struct Case {
    int part = 0;
    std::vector<int32_t> fanouts = {10, 5};
    bool replace = false;
    int64_t batch_size = 64;
    int64_t epoch = 1;
    int64_t first_batch = 0;
    int64_t num_batches = 0;  // 0 = the natural count
    int64_t num_epochs = 1;
  };

  // Every batch of the case, from the servers' stream and from the GPU, equal.
  void ExpectSameBatches(const Case& c) {
    client::PartitionClient& server = *servers_->clients[static_cast<size_t>(c.part)];
    auto seeds = server.GetSplit("train");
    ASSERT_TRUE(seeds.ok()) << seeds.status();
    const int64_t natural = client::NaturalBatches(std::ssize(*seeds), c.batch_size);
    const int64_t per_epoch = c.num_batches > 0 ? c.num_batches : natural;
    client::StreamOptions so;
    so.seeds = *seeds;
    so.batch_size = c.batch_size;
    so.shuffle_seed = client::StreamShuffleSeed(7, c.part);
    so.epoch = c.epoch;
    so.first_batch = c.first_batch;
    so.num_batches = per_epoch;
    so.num_epochs = c.num_epochs;
    so.fanouts = c.fanouts;
    so.replace = c.replace;
    so.without_features = true;
    auto stream = server.StreamBatches(so, servers_->metadata);
    ASSERT_TRUE(stream.ok()) << stream.status();

    GpuStreamPlan plan;
    plan.seeds = *seeds;
    auto labels = client::ReadLabels(servers_->metadata, client_of_, *seeds);
    ASSERT_TRUE(labels.ok()) << labels.status();
    plan.labels = *labels;
    plan.shuffle_seed = so.shuffle_seed;
    plan.batch_size = c.batch_size;
    plan.epoch = c.epoch;
    plan.first_batch = c.first_batch;
    plan.num_batches = per_epoch;
    plan.num_epochs = c.num_epochs;
    plan.fanouts = c.fanouts;
    plan.replace = c.replace;
    GpuSampledStream gpu(graph_, plan);

    const int64_t total = per_epoch * c.num_epochs - c.first_batch;
    for (int64_t b = 0; b < total; ++b) {
      SCOPED_TRACE("batch " + std::to_string(b) + " of the stream");
      auto data = (*stream)->Next();
      ASSERT_TRUE(data.ok() && data->has_value()) << data.status();
      auto want = ToTensors(**data, servers_->metadata.num_classes);
      ASSERT_TRUE(want.ok()) << want.status();
      auto got = gpu.Next();
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_TRUE(got->has_value());
      const BatchTensors& g = **got;
      ASSERT_TRUE(g.x_are_ids);
      EXPECT_EQ(g.batch_size, want->batch_size);
      EXPECT_EQ(g.num_nodes, want->num_nodes);
      EXPECT_EQ(g.nodes_before_hop, want->nodes_before_hop);
      EXPECT_EQ(g.edges_before_hop, want->edges_before_hop);
      ASSERT_TRUE(g.x[0].is_cuda());
      EXPECT_TRUE(torch::equal(g.x[0].cpu(), want->x[0])) << "ids";
      EXPECT_TRUE(torch::equal(g.y.cpu(), want->y)) << "labels";
      ASSERT_EQ(g.edges.size(), 1u);
      EXPECT_TRUE(torch::equal(g.edges[0].src.cpu(), want->edges[0].src)) << "edge sources";
      EXPECT_TRUE(torch::equal(g.edges[0].dst.cpu(), want->edges[0].dst)) << "edge targets";
    }
    auto end = gpu.Next();
    ASSERT_TRUE(end.ok()) << end.status();
    EXPECT_FALSE(end->has_value()) << "the GPU stream made more batches than the server's";
  }

  std::unique_ptr<graphshard::testing::TestCluster> cluster_;
  std::unique_ptr<client::ServerSet> servers_;
  client::ClientOf client_of_;
  std::shared_ptr<GpuGraph> graph_;
};

TEST_F(GpuSamplerTest, AnEpochOfEachPartEqualsTheServersBatches) {
  ExpectSameBatches({.part = 0});
  ExpectSameBatches({.part = 1, .epoch = 3});
}

TEST_F(GpuSamplerTest, ThreeHopsEveryNeighbourAndReplacementEqualTheServers) {
  ExpectSameBatches({.fanouts = {15, 10, 5}, .batch_size = 128});
  ExpectSameBatches({.fanouts = {-1, 3}, .batch_size = 16});
  ExpectSameBatches({.part = 1, .fanouts = {4, 4}, .replace = true});
}

TEST_F(GpuSamplerTest, WrappedResumedAndMultiEpochStreamsEqualTheServers) {
  // More batches than the shard cuts into (the last ones wrap around), from batch 2 of epoch 5,
  // then all of epoch 6.
  ExpectSameBatches({.batch_size = 50, .epoch = 5, .first_batch = 2, .num_batches = 4,
                     .num_epochs = 2});
}

TEST_F(GpuSamplerTest, RefusesATopologyThatDoesNotAddUp) {
  client::GraphTopology bad;
  bad.indptr = {0, 2, 5};
  bad.indices = {1, 0, 1};  // indptr says 5 edges
  auto graph = GpuGraph::Create(bad, torch::Device(torch::kCUDA, 0));
  ASSERT_FALSE(graph.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(graph.status())) << graph.status();
}

}  // namespace
}  // namespace graphshard::trainer
