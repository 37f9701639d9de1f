// Per-layer trimming (trainer/tensors.h LayerExtents; the models' Forward) on real batches,
// streamed from in-process partition servers on port 0: Cora (GraphSAGE, GCN; 2 and 3 layers)
// and IMDB (heterogeneous GraphSAGE). Trimmed seed logits and gradients equal the untrimmed ones
// (float32, 1e-5), and the layers really skip rows and edges.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "partitioner/read_input.h"
#include "tests/server/test_cluster.h"
#include "trainer/batch_client.h"
#include "trainer/model.h"
#include "trainer/model_registry.h"
#include "trainer/server_set.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {
namespace {

constexpr double kTolerance = 1e-5;

// A graph served by 2 in-process servers, and its part-0 batches (val split, so that there
// are several).
class Served {
 public:
  explicit Served(const partitioner::Graph& graph) : cluster_(graph, 2) {
    DiscoveryOptions o;
    for (int p = 0; p < 2; ++p) o.servers.push_back(cluster_.server(p).address());
    o.server_wait_s = 10;
    absl::StatusOr<ServerSet> set = ConnectServers(o);
    EXPECT_TRUE(set.ok()) << set.status();
    if (set.ok()) servers_ = std::make_unique<ServerSet>(*std::move(set));
  }
  const ServerMetadata& metadata() const { return servers_->metadata; }

  std::vector<BatchTensors> Batches(const std::vector<int32_t>& fanouts, int64_t batch_size) {
    std::vector<BatchTensors> out;
    if (servers_ == nullptr) return out;
    PartitionClient& client = *servers_->clients[0];
    absl::StatusOr<std::vector<int64_t>> seeds = client.GetSplit("val");
    EXPECT_TRUE(seeds.ok()) << seeds.status();
    if (!seeds.ok()) return out;
    StreamOptions so;
    so.seeds = *seeds;
    so.batch_size = batch_size;
    so.fanouts = fanouts;
    auto stream = client.StreamBatches(so, metadata());
    EXPECT_TRUE(stream.ok()) << stream.status();
    if (!stream.ok()) return out;
    while (true) {
      absl::StatusOr<absl::optional<MinibatchData>> next = (*stream)->Next();
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok() || !next->has_value()) break;
      absl::StatusOr<BatchTensors> t = ToTensors(**next, metadata().num_classes);
      EXPECT_TRUE(t.ok()) << t.status();
      if (!t.ok()) break;
      ToFloatFeatures(*t);
      out.push_back(*std::move(t));
    }
    return out;
  }

 private:
  graphshard::testing::TestCluster cluster_;
  std::unique_ptr<ServerSet> servers_;
};

double MaxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

// Seed logits and the loss's gradients with trimming off and on (eval mode: no dropout).
void ExpectTrimmedEqualsUntrimmed(GnnModelImpl& model, const BatchTensors& batch) {
  model.eval();
  std::vector<torch::Tensor> logits, grads;
  for (const bool trim : {false, true}) {
    model.set_compute({.trim = trim});
    model.zero_grad();
    torch::Tensor z = model.Forward(batch);
    torch::nn::functional::cross_entropy(z, batch.y).backward();
    logits.push_back(z.detach());
    grads.push_back(FlattenGradients(model.parameters()));
  }
  ASSERT_EQ(logits[1].sizes(), (std::vector<int64_t>{batch.batch_size, logits[0].size(1)}));
  EXPECT_LE(MaxAbsDiff(logits[0], logits[1]), kTolerance);
  EXPECT_LE(MaxAbsDiff(grads[0], grads[1]), kTolerance);
  EXPECT_GT(grads[1].abs().sum().item<double>(), 0);
}

std::shared_ptr<GnnModelImpl> Model(const ServerMetadata& md, const std::string& name,
                                    int64_t layers) {
  torch::manual_seed(1);
  absl::StatusOr<std::shared_ptr<GnnModelImpl>> m =
      CreateModel(md, {.name = name, .hidden_channels = 16, .num_layers = layers});
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : nullptr;
}

class CoraTrimTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graph_ = new partitioner::Graph(graphshard::testing::ReadCora());
    served_ = new Served(*graph_);
  }
  static void TearDownTestSuite() {
    delete served_;
    delete graph_;
  }
  static inline partitioner::Graph* graph_ = nullptr;
  static inline Served* served_ = nullptr;
};

TEST_F(CoraTrimTest, ExtentsArePrefixesThatShrinkTowardTheSeeds) {
  std::vector<BatchTensors> batches = served_->Batches({5, 4, 3}, 32);
  ASSERT_GE(batches.size(), 2u);
  for (const BatchTensors& b : batches) {
    const std::vector<LayerExtent> x = LayerExtents(b, 3);
    ASSERT_EQ(x.size(), 3u);
    EXPECT_EQ(x[0].in_nodes[0], b.num_nodes[0]);         // the first layer reads every row
    EXPECT_EQ(x[2].out_nodes[0], b.batch_size);          // the last computes the seeds alone
    EXPECT_EQ(x[0].edges[0], b.edges_before_hop[0][3]);  // ... over every edge
    for (size_t l = 0; l + 1 < x.size(); ++l) {
      EXPECT_EQ(x[l].out_nodes[0], x[l + 1].in_nodes[0]);
      EXPECT_LT(x[l + 1].edges[0], x[l].edges[0]) << "layer " << l + 1 << " skips no edge";
      EXPECT_LT(x[l + 1].out_nodes[0], x[l].out_nodes[0]);
    }
    EXPECT_EQ(x[2].edges[0], b.edges_before_hop[0][1]);  // the edges into the seeds
  }
  EXPECT_TRUE(LayerExtents(batches[0], 4).empty());  // more layers than hops: no trimming
}

TEST_F(CoraTrimTest, SageTrimmedLogitsEqualUntrimmed) {
  for (const std::vector<int32_t>& fanouts :
       {std::vector<int32_t>{5, 5}, std::vector<int32_t>{10, 5, 3}}) {
    std::shared_ptr<GnnModelImpl> model = Model(served_->metadata(), "sage", std::ssize(fanouts));
    ASSERT_NE(model, nullptr);
    std::vector<BatchTensors> batches = served_->Batches(fanouts, 64);
    ASSERT_GE(batches.size(), 2u);
    for (const BatchTensors& b : batches) ExpectTrimmedEqualsUntrimmed(*model, b);
  }
}

// GCN's edge weights use the degrees in the whole sampled subgraph with trimming too.
TEST_F(CoraTrimTest, GcnTrimmedLogitsEqualUntrimmed) {
  for (const std::vector<int32_t>& fanouts :
       {std::vector<int32_t>{5, 5}, std::vector<int32_t>{10, 5, 3}}) {
    std::shared_ptr<GnnModelImpl> model = Model(served_->metadata(), "gcn", std::ssize(fanouts));
    ASSERT_NE(model, nullptr);
    std::vector<BatchTensors> batches = served_->Batches(fanouts, 64);
    ASSERT_GE(batches.size(), 2u);
    for (const BatchTensors& b : batches) ExpectTrimmedEqualsUntrimmed(*model, b);
  }
}

// Heterogeneous GraphSAGE on IMDB (movie, director, actor; edges both ways), trimmed per node
// and edge type.
TEST(ImdbTrimTest, HeteroSageTrimmedLogitsEqualUntrimmed) {
  absl::StatusOr<partitioner::Graph> graph = partitioner::ReadGraph(
      std::string(GRAPHSHARD_SOURCE_DIR) + "/tests/data/imdb", partitioner::ReadOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status();
  Served served(*graph);
  ASSERT_TRUE(served.metadata().heterogeneous());
  for (const std::vector<int32_t>& fanouts :
       {std::vector<int32_t>{10, 10}, std::vector<int32_t>{5, 5, 5}}) {
    std::shared_ptr<GnnModelImpl> model = Model(served.metadata(), "sage", std::ssize(fanouts));
    ASSERT_NE(model, nullptr);
    std::vector<BatchTensors> batches = served.Batches(fanouts, 64);
    ASSERT_GE(batches.size(), 2u);
    for (const BatchTensors& b : batches) {
      ASSERT_FALSE(LayerExtents(b, std::ssize(fanouts)).empty());
      ExpectTrimmedEqualsUntrimmed(*model, b);
    }
  }
}

}  // namespace
}  // namespace graphshard::trainer
