// The trainer's GPU sampler (--sampler gpu, trainer/gpu_sampler.h) against real in-process
// partition servers on Cora (2 parts): every batch it samples on the GPU is the batch the
// servers' epoch stream sends for the same shard, shuffle seed, epoch and batch (the same
// seeds, labels, rows in the same order, edges and hop counts), over whole epochs and
// wrapped-around batches, two epochs in one stream, from a resumed batch, with fanouts that
// take every neighbour, with replacement, and across both parts' shards; the same with the
// topology in page-locked host memory (--sampler-topology host). Label gpu: the GPU
// machine only (built where LibTorch has CUDA).
//
// The servers start once for the whole test and are never torn down: on the GPU machine
// (PyTorch's wheel beside Debian's gRPC and protobuf) shutting in-process servers down crashes
// the process, whatever the test did (trainer_feature_store_test, which this change does not
// touch, crashes there the same way). main() ends the process with _Exit once the results are
// printed, before any destructor runs.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/debugging/failure_signal_handler.h"
#include "absl/debugging/symbolize.h"
#include "client/epoch_plan.h"
#include "client/graph_topology.h"
#include "client/server_set.h"
#include "tests/server/test_cluster.h"
#include "trainer/gpu_sampler.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {
namespace {

// A crash prints its stack (this test runs on the GPU machine only, without a debugger).
const bool kCrashesPrintTheirStack = [] {
  absl::InitializeSymbolizer("/proc/self/exe");
  absl::InstallFailureSignalHandler({});
  return true;
}();

// Two servers on Cora and the topology on the GPU, made once and never destroyed (see above).
struct Shared {
  graphshard::testing::TestCluster* cluster = nullptr;
  client::ServerSet* servers = nullptr;
  std::shared_ptr<GpuGraph> graph;
  std::shared_ptr<GpuGraph> host_graph;  // the same topology in page-locked host memory
};

class GpuSamplerTest : public ::testing::Test {
 protected:
  static Shared& shared() {
    static Shared* s = new Shared;
    return *s;
  }
  void SetUp() override {
    ASSERT_TRUE(torch::cuda::is_available()) << "this test needs a CUDA device (label gpu)";
    Shared& s = shared();
    if (s.cluster == nullptr) {
      s.cluster = new graphshard::testing::TestCluster(graphshard::testing::ReadCora(), 2);
      client::DiscoveryOptions o;
      o.registry_dir = s.cluster->registry_dir();
      o.server_wait_s = 10;
      auto set = client::ConnectServers(o);
      ASSERT_TRUE(set.ok()) << set.status();
      s.servers = new client::ServerSet(*std::move(set));
    }
    servers_ = s.servers;
    ASSERT_NE(servers_, nullptr);
    client_of_ = [this](int p) -> absl::StatusOr<client::PartitionClient*> {
      return servers_->clients[static_cast<size_t>(p)];
    };
    if (s.graph == nullptr) {
      auto topology = client::ReadTopology(servers_->metadata, client_of_, 500);
      ASSERT_TRUE(topology.ok()) << topology.status();
      auto graph = GpuGraph::Create(*topology, torch::Device(torch::kCUDA, 0));
      ASSERT_TRUE(graph.ok()) << graph.status();
      s.graph = *graph;
      auto host_graph = GpuGraph::Create(*topology, torch::Device(torch::kCUDA, 0), true);
      ASSERT_TRUE(host_graph.ok()) << host_graph.status();
      s.host_graph = *host_graph;
    }
    graph_ = s.graph;
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
    auto created = GpuSampledStream::Create(graph_, plan);
    ASSERT_TRUE(created.ok()) << created.status();
    GpuSampledStream& gpu = **created;

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

  client::ServerSet* servers_ = nullptr;
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
  ExpectSameBatches(
      {.batch_size = 50, .epoch = 5, .first_batch = 2, .num_batches = 4, .num_epochs = 2});
}

TEST_F(GpuSamplerTest, TheTopologyInHostMemoryGivesTheServersBatches) {
  graph_ = shared().host_graph;
  ASSERT_TRUE(graph_->on_host());
  EXPECT_EQ(graph_->device_bytes() + graph_->host_bytes(), shared().graph->device_bytes());
  EXPECT_EQ(graph_->device_bytes(), 8 * (graph_->num_nodes() + 1)) << "the offsets only";
  ExpectSameBatches({.part = 1, .epoch = 2});
  ExpectSameBatches({.fanouts = {15, 10, 5}, .batch_size = 128});
  ExpectSameBatches({.fanouts = {-1, 3}, .batch_size = 16, .num_epochs = 2});
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

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(failed);  // no destructors: see the top of this file
}
