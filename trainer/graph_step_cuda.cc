// GraphedStep with LibTorch's CUDA graphs (PyTorch's LibTorch on the GPU machine).
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainer/graph_step.h"

namespace graphshard::trainer {
namespace {

// Eager passes on the capture's side stream before the capture (PyTorch's advice for capturing
// a whole network: lazily made handles and workspaces exist by then).
constexpr int kWarmupPasses = 2;

// What a capture depends on: the rows per hop, the edges per hop, the features' shape and dtype.
std::vector<int64_t> ShapeKey(const BatchTensors& b) {
  std::vector<int64_t> key = b.nodes_before_hop[0];
  key.push_back(-1);
  key.insert(key.end(), b.edges_before_hop[0].begin(), b.edges_before_hop[0].end());
  key.push_back(-1);
  for (int64_t d : b.x[0].sizes()) key.push_back(d);
  key.push_back(static_cast<int64_t>(b.x[0].scalar_type()));
  return key;
}

GraphedOutputs Pass(GnnModelImpl& model, const BatchTensors& batch) {
  const torch::Tensor logits = model.Forward(batch);
  torch::Tensor loss = torch::nn::functional::cross_entropy(logits, batch.y);  // -100 ignored
  loss.backward();
  return {loss.detach(), logits.detach().argmax(1).eq(batch.y).sum()};
}

}  // namespace

struct GraphedStep::Impl {
  torch::Device device;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  BatchTensors inputs;  // the graph's static inputs
  GraphedOutputs outputs;
  std::vector<int64_t> key;
  std::string shape;
  int64_t captures = 0;
};

GraphedStep::GraphedStep(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GraphedStep::~GraphedStep() = default;

absl::StatusOr<std::unique_ptr<GraphedStep>> GraphedStep::Create(torch::Device device) {
  if (!device.is_cuda()) {
    return absl::InvalidArgumentError("CUDA graphs need a CUDA device, not " + device.str());
  }
  auto impl = std::make_unique<Impl>(Impl{.device = device});
  return std::unique_ptr<GraphedStep>(new GraphedStep(std::move(impl)));
}

int64_t GraphedStep::captures() const { return impl_->captures; }
std::string GraphedStep::last_shape() const { return impl_->shape; }

absl::StatusOr<GraphedOutputs> GraphedStep::Run(GnnModelImpl& model, const BatchTensors& batch,
                                                torch::Tensor& grads) {
  Impl& s = *impl_;
  if (batch.x.size() != 1 || batch.edges.size() != 1 || batch.nodes_before_hop.size() != 1 ||
      batch.edges_before_hop.size() != 1) {
    return absl::InvalidArgumentError("a CUDA graph step takes padded homogeneous node batches");
  }
  std::vector<int64_t> key = ShapeKey(batch);
  const int index = static_cast<int>(s.device.index());
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(index);
  if (s.graph == nullptr || key != s.key) {
    // The last graph, its outputs and its memory pool go first.
    s.outputs = {};
    s.graph.reset();
    s.inputs = BatchTensors{};
    s.key.clear();
    BatchTensors in = batch;
    in.x = {batch.x[0].clone()};
    in.y = batch.y.clone();
    in.edges = {{0, 0, batch.edges[0].src.clone(), batch.edges[0].dst.clone()}};
    s.inputs = std::move(in);
    const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, index);
    at::cuda::CUDAEvent inputs_ready;
    inputs_ready.record(current);
    inputs_ready.block(side);
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    bool capturing = false;
    try {
      c10::cuda::CUDAStreamGuard on_side(side);
      for (int i = 0; i < kWarmupPasses; ++i) Pass(model, s.inputs);
      grads.zero_();
      graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      capturing = true;
      s.outputs = Pass(model, s.inputs);
      capturing = false;
      graph->capture_end();
    } catch (const c10::Error& e) {
      if (capturing) {
        try {
          graph->capture_end();
        } catch (const c10::Error&) {
        }
      }
      s.outputs = {};
      return absl::InternalError(
          absl::StrCat("capturing the training step as a CUDA graph (--static-shapes off trains "
                       "without): ",
                       e.what_without_backtrace()));
    }
    at::cuda::CUDAEvent captured;
    captured.record(side);
    captured.block(current);
    s.graph = std::move(graph);
    s.key = std::move(key);
    s.shape = absl::StrCat("nodes per hop up to [",
                           absl::StrJoin(batch.nodes_before_hop[0], ", "), "], edges [",
                           absl::StrJoin(batch.edges_before_hop[0], ", "), "]");
    ++s.captures;
  }
  s.inputs.x[0].copy_(batch.x[0], /*non_blocking=*/true);
  s.inputs.y.copy_(batch.y, /*non_blocking=*/true);
  s.inputs.edges[0].src.copy_(batch.edges[0].src, /*non_blocking=*/true);
  s.inputs.edges[0].dst.copy_(batch.edges[0].dst, /*non_blocking=*/true);
  s.inputs.seeds = batch.seeds;
  s.graph->replay();
  return s.outputs;
}

}  // namespace graphshard::trainer
