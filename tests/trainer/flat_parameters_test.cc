// The trainer's flat parameters (tensors.h, BindToFlat) and the checkpoint format that holds
// their optimizer state (checkpoint.h).
#include <torch/torch.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/testing/scratch_dir.h"
#include "trainer/checkpoint.h"
#include "trainer/internal/session_state.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {
namespace {

// Every parameter is a view of its slice of one tensor, its gradient a view of the gradients'
// slice: backward accumulates into the flat gradients, an optimizer step over the flat tensor
// moves the parameters.
TEST(FlatParameters, ParametersAndGradientsAreViewsOfTwoTensors) {
  torch::manual_seed(1);
  torch::nn::Linear lin(torch::nn::LinearOptions(3, 2));
  const std::vector<torch::Tensor> params = lin->parameters();
  const torch::Tensor weight_before = params[0].detach().clone();
  FlatParameters flat;
  ASSERT_TRUE(BindToFlat(params, flat).ok());
  ASSERT_EQ(flat.values.numel(), 3 * 2 + 2);
  EXPECT_TRUE(torch::equal(params[0].detach(), weight_before));  // values kept
  EXPECT_EQ(flat.values.data_ptr(), params[0].data_ptr());

  const torch::Tensor x = torch::randn({4, 3});
  lin->forward(x).sum().backward();
  const torch::Tensor want_bias_grad = torch::full({2}, 4.0f);
  EXPECT_TRUE(torch::equal(flat.grads.slice(0, 6, 8), want_bias_grad)) << flat.grads;
  lin->forward(x).sum().backward();  // accumulates, as autograd does into a gradient
  EXPECT_TRUE(torch::equal(params[1].grad(), 2 * want_bias_grad));

  torch::optim::SGD sgd({flat.values}, torch::optim::SGDOptions(0.5));
  sgd.step();
  EXPECT_TRUE(torch::equal(params[1].detach(), flat.values.slice(0, 6, 8)));
  EXPECT_FALSE(torch::equal(params[0].detach(), weight_before));
  flat.grads.zero_();
  EXPECT_EQ(params[0].grad().abs().sum().item<float>(), 0.0f);
}

// A parameter given new storage (as a checkpoint's load does) is copied back and bound again.
TEST(FlatParameters, RebindingTakesNewStorageBack) {
  torch::nn::Linear lin(torch::nn::LinearOptions(2, 2));
  const std::vector<torch::Tensor> params = lin->parameters();
  FlatParameters flat;
  ASSERT_TRUE(BindToFlat(params, flat).ok());
  const void* storage = flat.values.data_ptr();
  {
    torch::NoGradGuard no_grad;
    params[0].set_data(torch::full({2, 2}, 7.0f));
  }
  ASSERT_NE(params[0].data_ptr(), flat.values.data_ptr());
  ASSERT_TRUE(BindToFlat(params, flat).ok());
  EXPECT_EQ(flat.values.data_ptr(), storage);
  EXPECT_EQ(params[0].data_ptr(), flat.values.data_ptr());
  EXPECT_TRUE(torch::equal(flat.values.slice(0, 0, 4), torch::full({4}, 7.0f)));
}

TEST(FlatParameters, MixedDtypesAreRefused) {
  std::vector<torch::Tensor> params = {torch::zeros({2}), torch::zeros({2}, torch::kFloat64)};
  FlatParameters flat;
  const absl::Status s = BindToFlat(params, flat);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "mix dtypes")) << s;
}

// A checkpoint of the per-parameter optimizer (format 1) is refused, naming both formats.
TEST(CheckpointFormat, FormatOneIsRefusedNamingBoth) {
  const graphshard::testing::ScratchDir scratch("flat_parameters_test");
  const std::string& dir = scratch.path();
  const std::string config = "task=node";
  torch::serialize::OutputArchive archive;
  torch::Tensor config_t = torch::empty({static_cast<int64_t>(config.size())}, torch::kUInt8);
  std::memcpy(config_t.data_ptr<uint8_t>(), config.data(), config.size());
  archive.write("config", config_t);
  archive.write("position", torch::tensor({int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}}));
  archive.write("sums", torch::zeros({3}, torch::kFloat64));
  archive.save_to(CheckpointPath(dir));
  SessionState state(torch::kCPU);
  const auto loaded = LoadCheckpoint(dir, config, state);
  ASSERT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << loaded.status();
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), CheckpointPath(dir)));
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), "format 1, this trainer reads 2"))
      << loaded.status();
}

}  // namespace
}  // namespace graphshard::trainer
