// GraphedStep where this LibTorch has no CUDA (Debian's CPU-only build): nothing to capture.
#include "absl/status/status.h"
#include "trainer/graph_step.h"

namespace graphshard::trainer {

struct GraphedStep::Impl {};

GraphedStep::GraphedStep(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GraphedStep::~GraphedStep() = default;

absl::StatusOr<std::unique_ptr<GraphedStep>> GraphedStep::Create(torch::Device device) {
  return absl::UnimplementedError("CUDA graphs on " + device.str() +
                                  ": this LibTorch has no CUDA (--static-shapes pads the batches "
                                  "and trains eagerly)");
}

absl::StatusOr<GraphedOutputs> GraphedStep::Run(GnnModelImpl&, const BatchTensors&,
                                                torch::Tensor&) {
  return absl::UnimplementedError("CUDA graphs: this LibTorch has no CUDA");
}

int64_t GraphedStep::captures() const { return 0; }
std::string GraphedStep::last_shape() const { return ""; }

}  // namespace graphshard::trainer
