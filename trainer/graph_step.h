#ifndef GRAPHSHARD_TRAINER_GRAPH_STEP_H_
#define GRAPHSHARD_TRAINER_GRAPH_STEP_H_

// The GPU training step of --static-shapes: the forward pass, loss and backward pass of a
// padded node batch (static_shapes.h) captured once per batch shape as a CUDA graph and then
// replayed, one launch instead of the ~160 kernels the CPU launched per step (the step was
// CPU-bound: tests/bench/RESULTS.md, "The C++ step profiled"). The gradient all-reduce and the
// optimizer stay outside the graph (a few kernels over the flat tensors, tensors.h).
//
// A new shape (a capacity raised) drops the last graph and captures anew: a few warm-up passes
// on a side stream (cuBLAS workspaces, the autograd engine's device threads), then the capture,
// in the caching allocator's private pool for the graph. The batch's tensors are copied into
// the graph's static inputs before each replay. Dropout draws through the graph-safe Philox
// state: every replay reads the generator's seed and offset, so torch::manual_seed before a
// step gives it its own draws, as eagerly.
//
// Built from graph_step_cuda.cc where this LibTorch has CUDA, else graph_step_none.cc (Create
// says so). Includes Torch. Not thread-safe: the training loop's thread.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/model.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

struct GraphedOutputs {
  torch::Tensor loss;     // float32 []: mean cross-entropy over the batch's real seeds
  torch::Tensor correct;  // int64 []: real seeds predicted right
};

class GraphedStep {
 public:
  // For the model on CUDA device `device`. Unimplemented where this LibTorch has no CUDA
  // graphs (Debian's CPU-only LibTorch).
  static absl::StatusOr<std::unique_ptr<GraphedStep>> Create(torch::Device device);
  ~GraphedStep();
  GraphedStep(const GraphedStep&) = delete;
  GraphedStep& operator=(const GraphedStep&) = delete;

  // The step's forward and backward pass over `batch` (padded, on the device; its labels past
  // the real seeds -100): the loss, its gradients added into `grads` (the model's flat
  // gradients, which every parameter's .grad views: zero them before), and the count right.
  // Captures first when the batch's shape is new. The outputs are the graph's own tensors:
  // read them before the next Run. Internal naming the step when CUDA refuses the capture.
  absl::StatusOr<GraphedOutputs> Run(GnnModelImpl& model, const BatchTensors& batch,
                                     torch::Tensor& grads);

  // Captures so far (1 + shapes grown); what the last one was for.
  int64_t captures() const;
  std::string last_shape() const;

 private:
  struct Impl;
  explicit GraphedStep(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_GRAPH_STEP_H_
