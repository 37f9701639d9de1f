// GraphSAGE (homogeneous and heterogeneous) and GCN against hand-computed examples.
#include "trainer/sage_model.h"

#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/gcn_model.h"

namespace graphshard::trainer {
namespace {

// Edges 0 -> 2, 1 -> 2, 2 -> 0: node 2 has in-neighbours {0, 1}, node 0 has {2}, node 1 none.
torch::Tensor Src() { return torch::tensor({0, 1, 2}, torch::kInt64); }
torch::Tensor Dst() { return torch::tensor({2, 2, 0}, torch::kInt64); }

void Set(torch::Tensor param, const torch::Tensor& value) {
  torch::NoGradGuard no_grad;
  param.copy_(value.view_as(param));
}

TEST(SageConv, MatchesHandComputedExampleProjectingFirst) {
  SageConv conv(2, 1);  // out < in: the project-then-aggregate path
  Set(conv->lin_l->weight, torch::tensor({1.0f, 2.0f}));
  Set(conv->lin_l->bias, torch::tensor({0.5f}));
  Set(conv->lin_r->weight, torch::tensor({-1.0f, 1.0f}));
  torch::Tensor x = torch::tensor({1.0f, 0.0f, 0.0f, 1.0f, 2.0f, 2.0f}).view({3, 2});
  // node 0: lin_l([2,2]) = 6.5, lin_r([1,0]) = -1  -> 5.5
  // node 1: no in-edges, lin_l(0) = 0.5, lin_r([0,1]) = 1 -> 1.5
  // node 2: lin_l(mean([1,0],[0,1]) = [.5,.5]) = 2.0, lin_r([2,2]) = 0 -> 2.0
  torch::Tensor out = conv->forward(x, Src(), Dst());
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(torch::allclose(out.view({-1}), torch::tensor({5.5f, 1.5f, 2.0f}))) << out;
}

TEST(SageConv, MatchesHandComputedExampleAggregatingFirst) {
  SageConv conv(1, 2);  // out >= in: aggregate, then lin_l
  Set(conv->lin_l->weight, torch::tensor({1.0f, 2.0f}));
  Set(conv->lin_l->bias, torch::tensor({0.0f, 1.0f}));
  Set(conv->lin_r->weight, torch::tensor({3.0f, 0.0f}));
  torch::Tensor x = torch::tensor({1.0f, 2.0f, 4.0f}).view({3, 1});
  // node 0: mean 4 -> [4, 9] + [3, 0]; node 1: -> [0, 1] + [6, 0]; node 2: mean 1.5 ->
  // [1.5, 4] + [12, 0].
  torch::Tensor out = conv->forward(x, Src(), Dst());
  EXPECT_TRUE(
      torch::allclose(out, torch::tensor({7.0f, 9.0f, 6.0f, 1.0f, 13.5f, 4.0f}).view({3, 2})))
      << out;
}

TEST(SageConv, HasPygParameterLayout) {
  GraphSage model(GraphSageOptions{
      .in_channels = 5, .hidden_channels = 4, .out_channels = 3, .num_layers = 2, .dropout = 0.5});
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"convs.0.lin_l.weight", "convs.0.lin_l.bias",
                                             "convs.0.lin_r.weight", "convs.1.lin_l.weight",
                                             "convs.1.lin_l.bias", "convs.1.lin_r.weight"}));
  EXPECT_EQ(model->named_parameters()["convs.1.lin_l.weight"].sizes(),
            (std::vector<int64_t>{3, 4}));
}

TEST(GraphSage, EvalForwardIsConvReluConv) {
  torch::manual_seed(0);
  GraphSage model(GraphSageOptions{
      .in_channels = 2, .hidden_channels = 3, .out_channels = 2, .num_layers = 2, .dropout = 0.5});
  model->eval();
  torch::Tensor x = torch::randn({3, 2});
  auto params = model->named_parameters();
  auto conv = [&](const std::string& prefix, const torch::Tensor& h) {
    torch::Tensor mean = torch::stack({h[2], torch::zeros_like(h[0]), (h[0] + h[1]) / 2});
    return torch::nn::functional::linear(mean, params[prefix + ".lin_l.weight"],
                                         params[prefix + ".lin_l.bias"]) +
           torch::nn::functional::linear(h, params[prefix + ".lin_r.weight"]);
  };
  torch::Tensor expected = conv("convs.1", torch::relu(conv("convs.0", x)));
  EXPECT_TRUE(torch::allclose(model->forward(x, Src(), Dst()), expected, 1e-5, 1e-6));
}

TEST(GraphSage, TrainingAppliesDropoutAndBackpropagates) {
  torch::manual_seed(0);
  GraphSage model(GraphSageOptions{
      .in_channels = 2, .hidden_channels = 8, .out_channels = 2, .num_layers = 2, .dropout = 0.5});
  torch::Tensor x = torch::randn({3, 2});
  model->train();
  torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x, Src(), Dst()),
                                                            torch::tensor({0, 1, 0}));
  loss.backward();
  for (const auto& p : model->parameters()) EXPECT_TRUE(p.grad().defined());
}

// GCN normalisation on edges 0 -> 2, 1 -> 2, 2 -> 0 with self loops: deg = [2, 1, 3].
TEST(GcnNormalize, AddsSelfLoopsAndSymmetricWeights) {
  GcnGraph g = GcnNormalize(Src(), Dst(), 3, torch::TensorOptions().dtype(torch::kFloat32));
  ASSERT_EQ(g.src.size(0), 6);
  const float s2 = 1.0f / std::sqrt(2.0f), s3 = 1.0f / std::sqrt(3.0f);
  // edges 0->2, 1->2, 2->0, then loops 0, 1, 2
  torch::Tensor want = torch::tensor({s2 * s3, 1.0f * s3, s3 * s2, 0.5f, 1.0f, 1.0f / 3.0f});
  EXPECT_TRUE(torch::allclose(g.weight, want)) << g.weight;
}

TEST(GcnConv, MatchesDenseNormalisedAdjacency) {
  GcnConv conv(2, 1);
  Set(conv->lin->weight, torch::tensor({1.0f, -1.0f}));
  Set(conv->bias, torch::tensor({0.25f}));
  torch::Tensor x = torch::tensor({1.0f, 0.0f, 0.0f, 1.0f, 2.0f, 2.0f}).view({3, 2});
  // A_hat[i][j] = weight of edge j -> i, D^-1/2 (A + I) D^-1/2 with deg = [2, 1, 3].
  torch::Tensor a = torch::zeros({3, 3});
  a[2][0] = 1, a[2][1] = 1, a[0][2] = 1;
  a += torch::eye(3);
  torch::Tensor dinv = a.sum(1).pow(-0.5);
  torch::Tensor norm = dinv.unsqueeze(1) * a * dinv.unsqueeze(0);
  torch::Tensor want = torch::matmul(norm, torch::matmul(x, conv->lin->weight.t())) + 0.25f;
  GcnGraph g = GcnNormalize(Src(), Dst(), 3, x.options());
  EXPECT_TRUE(torch::allclose(conv->forward(x, g), want, 1e-5, 1e-6));
}

// Two node types: "user" (no features) -> "item" (3 features, 2 classes), edges both ways.
TEST(HeteroSage, BuildsOneConvPerEdgeTypeAndOutputsTargetLogits) {
  client::ServerMetadata md;
  md.node_types = {{"item", 4, 3, 2}, {"user", 5, 0, 0}};
  md.target = 0;
  md.target_type = "item";
  md.num_classes = 2;
  md.edge_types = {{"user__buys__item", 1, 0}, {"item__rev__user", 0, 1}};
  torch::manual_seed(0);
  HeteroSage model(md, /*hidden_channels=*/8, /*num_layers=*/2, /*dropout=*/0.0);
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters()) names.push_back(p.key());
  // Layer 0: both edge types; layer 1: only the one into the target type.
  EXPECT_EQ(names, (std::vector<std::string>{
                       "input_user", "convs_0_user__buys__item.lin_l.weight",
                       "convs_0_user__buys__item.lin_l.bias",
                       "convs_0_user__buys__item.lin_r.weight",
                       "convs_0_item__rev__user.lin_l.weight",
                       "convs_0_item__rev__user.lin_l.bias",
                       "convs_0_item__rev__user.lin_r.weight",
                       "convs_1_user__buys__item.lin_l.weight",
                       "convs_1_user__buys__item.lin_l.bias",
                       "convs_1_user__buys__item.lin_r.weight"}));
  BatchTensors b;
  b.batch_size = 2;
  b.seed_type = 0;
  b.num_nodes = {4, 5};
  b.x = {torch::randn({4, 3}), torch::zeros({5, 0})};
  b.y = torch::tensor({0, 1});
  b.edges = {{1, 0, torch::tensor({0, 1, 4}), torch::tensor({0, 0, 3})},
             {0, 1, torch::tensor({0, 2}), torch::tensor({1, 4})}};
  torch::Tensor logits = model->Forward(b);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 2}));
  torch::nn::functional::cross_entropy(logits, b.y).backward();
  EXPECT_TRUE(model->named_parameters()["input_user"].grad().defined());
}

}  // namespace
}  // namespace graphshard::trainer
