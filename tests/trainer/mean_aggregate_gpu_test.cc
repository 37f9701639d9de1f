// SAGE's fused mean aggregation (trainer/mean_aggregate_kernel.h) against torch's form on a GPU:
// the same outputs and gradients (to float rounding: the kernel's atomic adds order a row's
// terms differently), edges grouped by destination or shuffled, widths from 1 to 256 columns,
// destinations without edges; torch's form under --deterministic. Label gpu: needs a CUDA
// device (the GPU machine), not run in CI.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/sage_model.h"

namespace graphshard::trainer {
namespace {

struct Graph {
  torch::Tensor src, dst, divisor;
  int64_t rows = 0, num_dst = 0;
};

// `edges` edges from `rows` source rows into the first 90% of `num_dst` destinations (the rest
// have none), grouped by destination as a server sends them, or shuffled.
Graph RandomGraph(int64_t rows, int64_t num_dst, int64_t edges, bool grouped, uint64_t seed) {
  torch::manual_seed(seed);
  const torch::TensorOptions cuda = torch::TensorOptions().device(torch::kCUDA);
  Graph g;
  g.rows = rows;
  g.num_dst = num_dst;
  g.src = torch::randint(rows, {edges}, cuda.dtype(torch::kInt64));
  g.dst = torch::randint(std::max<int64_t>(1, num_dst * 9 / 10), {edges}, cuda.dtype(torch::kInt64));
  if (grouped) g.dst = std::get<0>(torch::sort(g.dst));
  g.divisor = MeanDivisor(g.dst, num_dst, cuda.dtype(torch::kFloat32));
  return g;
}

void ExpectClose(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const double diff = (a - b).abs().max().item<double>();
  EXPECT_TRUE(torch::allclose(a, b, /*rtol=*/1e-5, /*atol=*/1e-5)) << what << ": max |diff| " << diff;
}

class FusedMeanAggregate : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(torch::cuda::is_available()) << "this test needs a CUDA device (label gpu)";
  }
};

TEST_F(FusedMeanAggregate, MatchesTorchsFormForwardAndBackward) {
  for (const bool grouped : {true, false}) {
    for (const int64_t dim : {1, 47, 100, 256}) {
      const std::string what = "dim " + std::to_string(dim) + (grouped ? " grouped" : " shuffled");
      const Graph g = RandomGraph(5000, 3000, 40000, grouped, 7 + dim);
      torch::Tensor x = torch::randn({g.rows, dim}, torch::TensorOptions().device(torch::kCUDA))
                            .requires_grad_(true);
      torch::Tensor x_ref = x.detach().clone().requires_grad_(true);
      torch::Tensor out = MeanAggregate(x, g.src, g.dst, g.num_dst, g.divisor, /*fused=*/true);
      torch::Tensor ref = MeanAggregate(x_ref, g.src, g.dst, g.num_dst, g.divisor, false);
      // The kernel ran, not torch's form: its autograd node is ours.
      ASSERT_NE(out.grad_fn(), nullptr);
      EXPECT_NE(out.grad_fn()->name().find("FusedMeanAggregate"), std::string::npos)
          << out.grad_fn()->name();
      ExpectClose(out, ref, what + " forward");
      // Destinations without edges are zero.
      EXPECT_EQ(out.slice(0, g.num_dst * 9 / 10).abs().sum().item<float>(), 0.0f) << what;
      const torch::Tensor grad = torch::randn_like(out);
      out.backward(grad);
      ref.backward(grad);
      ExpectClose(x.grad(), x_ref.grad(), what + " backward");
    }
  }
}

TEST_F(FusedMeanAggregate, NoEdgesGivesZeros) {
  const torch::TensorOptions cuda = torch::TensorOptions().device(torch::kCUDA);
  const torch::Tensor none = torch::empty({0}, cuda.dtype(torch::kInt64));
  torch::Tensor x = torch::randn({10, 8}, cuda).requires_grad_(true);
  torch::Tensor out = MeanAggregate(x, none, none, 4, {}, true);
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(out.abs().sum().item<float>(), 0.0f);
  out.sum().backward();
  EXPECT_EQ(x.grad().abs().sum().item<float>(), 0.0f);
}

TEST_F(FusedMeanAggregate, DeterministicModeUsesTorchsFormBitForBit) {
  const Graph g = RandomGraph(2000, 1000, 15000, true, 3);
  const torch::Tensor x = torch::randn({g.rows, 64}, torch::TensorOptions().device(torch::kCUDA));
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  const torch::Tensor a = MeanAggregate(x, g.src, g.dst, g.num_dst, g.divisor, true);
  const torch::Tensor b = MeanAggregate(x, g.src, g.dst, g.num_dst, g.divisor, false);
  at::globalContext().setDeterministicAlgorithms(false, false);
  EXPECT_TRUE(torch::equal(a, b));
}

// A whole GraphSAGE step: the same logits and parameter gradients either way.
TEST_F(FusedMeanAggregate, GraphSageStepMatches) {
  const Graph g = RandomGraph(4000, 4000, 60000, true, 11);
  const torch::Tensor x = torch::randn({g.rows, 100}, torch::TensorOptions().device(torch::kCUDA));
  std::vector<torch::Tensor> logits, grads;
  for (const bool fused : {true, false}) {
    torch::manual_seed(5);
    GraphSage model(GraphSageOptions{.in_channels = 100,
                                     .hidden_channels = 256,
                                     .out_channels = 47,
                                     .num_layers = 3,
                                     .dropout = 0.0});
    model->to(torch::kCUDA);
    model->set_compute({.fused_aggregation = fused});
    torch::Tensor out = model->forward(x, g.src, g.dst);
    out.square().sum().backward();
    logits.push_back(out.detach());
    std::vector<torch::Tensor> flat;
    for (const torch::Tensor& p : model->parameters()) flat.push_back(p.grad().flatten());
    grads.push_back(torch::cat(flat));
  }
  ExpectClose(logits[0], logits[1], "logits");
  EXPECT_TRUE(torch::allclose(grads[0], grads[1], 1e-4, 1e-4))
      << "max |diff| " << (grads[0] - grads[1]).abs().max().item<double>();
}

}  // namespace
}  // namespace graphshard::trainer
