// Per-layer trimming (trainer/tensors.h LayerExtents; the models' Forward) on real batches,
// streamed from in-process partition servers on port 0: Cora (GraphSAGE, GCN; 2 and 3 layers)
// and IMDB (heterogeneous GraphSAGE). Trimmed seed logits and gradients equal the untrimmed ones
// (float32, 1e-5), and the layers really skip rows and edges.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/batch_client.h"
#include "client/server_set.h"
#include "gtest/gtest.h"
#include "partitioner/generate.h"
#include "partitioner/read_input.h"
#include "tests/server/test_cluster.h"
#include "tests/testing/source_paths.h"
#include "trainer/model.h"
#include "trainer/model_registry.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {
namespace {

constexpr double kTolerance = 1e-5;

// A graph served by 2 in-process servers, and its part-0 batches (val split, so that there
// are several).
class Served {
 public:
  explicit Served(const partitioner::Graph& graph) : cluster_(graph, 2) {
    client::DiscoveryOptions o;
    for (int p = 0; p < 2; ++p) o.servers.push_back(cluster_.server(p).address());
    o.server_wait_s = 10;
    absl::StatusOr<client::ServerSet> set = client::ConnectServers(o);
    EXPECT_TRUE(set.ok()) << set.status();
    if (set.ok()) servers_ = std::make_unique<client::ServerSet>(*std::move(set));
  }
  const client::ServerMetadata& metadata() const { return servers_->metadata; }

  std::vector<BatchTensors> Batches(const std::vector<int32_t>& fanouts, int64_t batch_size) {
    std::vector<BatchTensors> out;
    if (servers_ == nullptr) return out;
    client::PartitionClient& client = *servers_->clients[0];
    absl::StatusOr<std::vector<int64_t>> seeds = client.GetSplit("val");
    EXPECT_TRUE(seeds.ok()) << seeds.status();
    if (!seeds.ok()) return out;
    client::StreamOptions so;
    so.seeds = *seeds;
    so.batch_size = batch_size;
    so.fanouts = fanouts;
    auto stream = client.StreamBatches(so, metadata());
    EXPECT_TRUE(stream.ok()) << stream.status();
    if (!stream.ok()) return out;
    while (true) {
      absl::StatusOr<absl::optional<client::MinibatchData>> next = (*stream)->Next();
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
  std::unique_ptr<client::ServerSet> servers_;
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

std::shared_ptr<GnnModelImpl> Model(const client::ServerMetadata& md, const std::string& name,
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
  absl::StatusOr<partitioner::Graph> graph =
      partitioner::ReadGraph(testing::SourceDir() + "/tests/data/imdb", partitioner::ReadOptions{});
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

// PyG's to_hetero(GraphSAGE) as written: per layer, one SAGEConv per edge type (mean of the
// sources' rows, lin_l with bias, lin_r of the destination's rows), summed per destination
// type; a featureless type's learned vector repeated into a row per node. Untrimmed, from the
// model's parameters by name, independent of HeteroSageImpl's fused computation.
torch::Tensor ReferenceHeteroSage(GnnModelImpl& model, const client::ServerMetadata& md,
                                  const BatchTensors& b, int64_t layers) {
  const auto params = model.named_parameters();
  const size_t types = md.node_types.size();
  std::vector<torch::Tensor> h(types);
  for (size_t t = 0; t < types; ++t) {
    const std::string input = absl::StrCat("input_", md.node_types[t].name);
    h[t] =
        params.contains(input) ? params[input].unsqueeze(0).expand({b.num_nodes[t], -1}) : b.x[t];
  }
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<torch::Tensor> out(types);
    for (size_t e = 0; e < md.edge_types.size(); ++e) {
      const std::string conv = absl::StrCat("convs_", l, "_", md.edge_types[e].name);
      if (!params.contains(conv + ".lin_l.weight")) continue;
      const auto src = static_cast<size_t>(md.edge_types[e].src);
      const auto dst = static_cast<size_t>(md.edge_types[e].dst);
      const torch::Tensor& s = b.edges[e].src;
      const torch::Tensor& d = b.edges[e].dst;
      const int64_t n = h[dst].size(0);
      torch::Tensor sum =
          torch::zeros({n, h[src].size(1)}).index_add(0, d, h[src].index_select(0, s));
      torch::Tensor deg = torch::zeros({n}).index_add(0, d, torch::ones({d.size(0)}));
      torch::Tensor mean = sum / deg.clamp_min(1).unsqueeze(1);
      torch::Tensor y = torch::matmul(mean, params[conv + ".lin_l.weight"].t()) +
                        params[conv + ".lin_l.bias"] +
                        torch::matmul(h[dst], params[conv + ".lin_r.weight"].t());
      out[dst] = out[dst].defined() ? out[dst] + y : y;
    }
    if (l + 1 < layers) {
      for (torch::Tensor& x : out) {
        if (x.defined()) x = torch::relu(x);
      }
    }
    h = std::move(out);
  }
  return h[static_cast<size_t>(md.target)].slice(0, 0, b.batch_size);
}

// On an ogbn-mag-shaped graph (papers with features; authors, institutions and fields of study
// without: they start from learned vectors), the fused heterogeneous SAGE (one root matmul per
// type, featureless means without gathering copies) equals the per-edge-type definition, trimmed
// and untrimmed, logits and gradients.
TEST(MagTrimTest, HeteroSageEqualsPerEdgeTypeDefinitionWithFeaturelessTypes) {
  partitioner::GenerateOptions o;
  o.kind = "mag";
  o.seed = 3;
  o.num_nodes = 400;
  o.num_features = 8;
  o.num_classes = 4;
  absl::StatusOr<partitioner::Graph> graph = partitioner::GenerateMag(o);
  ASSERT_TRUE(graph.ok()) << graph.status();
  Served served(*graph);
  const client::ServerMetadata& md = served.metadata();
  ASSERT_TRUE(md.heterogeneous());
  int featureless = 0;
  for (const auto& t : md.node_types) featureless += t.feat_dim == 0 ? 1 : 0;
  ASSERT_GE(featureless, 2);
  const std::vector<int32_t> fanouts = {4, 3, 2};
  std::shared_ptr<GnnModelImpl> model = Model(md, "sage", 3);
  ASSERT_NE(model, nullptr);
  std::vector<BatchTensors> batches = served.Batches(fanouts, 16);
  ASSERT_GE(batches.size(), 2u);
  model->eval();
  for (const BatchTensors& b : batches) {
    ASSERT_FALSE(LayerExtents(b, 3).empty());
    model->zero_grad();
    torch::Tensor want = ReferenceHeteroSage(*model, md, b, 3);
    torch::nn::functional::cross_entropy(want, b.y).backward();
    const torch::Tensor want_grads = FlattenGradients(model->parameters());
    for (const bool trim : {false, true}) {
      model->set_compute({.trim = trim});
      model->zero_grad();
      torch::Tensor got = model->Forward(b);
      torch::nn::functional::cross_entropy(got, b.y).backward();
      EXPECT_LE(MaxAbsDiff(got.detach(), want.detach()), kTolerance) << "trim " << trim;
      EXPECT_LE(MaxAbsDiff(FlattenGradients(model->parameters()), want_grads), kTolerance)
          << "trim " << trim;
    }
  }
}

}  // namespace
}  // namespace graphshard::trainer
