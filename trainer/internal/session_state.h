#ifndef GRAPHSHARD_TRAINER_INTERNAL_SESSION_STATE_H_
#define GRAPHSHARD_TRAINER_INTERNAL_SESSION_STATE_H_

// The Torch side of a training session (session.h): what the epoch loop trains and a
// checkpoint saves. Includes Torch: only for session.cc, epoch_loop.cc and checkpoint.cc.
// Not thread-safe.

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "absl/types/optional.h"
#include "trainer/model.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

struct SessionState {
  explicit SessionState(torch::Device d) : device(d) {
    if (device.is_cuda()) device_guard.emplace(device);
  }
  torch::Device device;
  absl::optional<c10::DeviceGuard> device_guard;  // the device is current while the run lasts
  std::shared_ptr<GnnModelImpl> model;
  std::vector<torch::Tensor> params;  // model->parameters(), in order: views of flat.values
  FlatParameters flat;                // the parameters and their gradients, each one tensor
  std::unique_ptr<torch::optim::Adam> optimizer;
  int64_t global_step = 0;  // optimizer steps taken, across resumes
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_INTERNAL_SESSION_STATE_H_
