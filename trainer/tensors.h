#ifndef GRAPHSHARD_TRAINER_TENSORS_H_
#define GRAPHSHARD_TRAINER_TENSORS_H_

// The trainer's one Torch boundary: decoded minibatches (plain vectors) -> torch::Tensor, and
// model parameters <-> flat float buffers for the communicator. Includes Torch: include only
// from the Torch files of trainer/ (model, train loop).

#include <torch/torch.h>

#include <vector>

#include "absl/status/statusor.h"
#include "trainer/batch_client.h"

namespace graphshard::trainer {

struct BatchTensors {
  int64_t batch_size = 0;
  torch::Tensor x;         // float32 [num_nodes, feat_dim]
  torch::Tensor y;         // int64 [batch_size]: labels of the seeds
  torch::Tensor edge_src;  // int64 [num_edges]
  torch::Tensor edge_dst;  // int64 [num_edges]
};

// Copies the arrays into tensors. InvalidArgument if a seed's label is outside
// [0, num_classes) (an unlabelled node in a split, or the wrong label space).
absl::StatusOr<BatchTensors> ToTensors(const MinibatchData& batch, int64_t num_classes);

// All parameters (or their gradients; a missing gradient reads as zeros), flattened in order.
torch::Tensor FlattenParameters(const std::vector<torch::Tensor>& params);
torch::Tensor FlattenGradients(const std::vector<torch::Tensor>& params);
// The inverse: copies consecutive slices of `flat` into each parameter (or its gradient).
void UnflattenIntoParameters(const torch::Tensor& flat, const std::vector<torch::Tensor>& params);
void UnflattenIntoGradients(const torch::Tensor& flat, const std::vector<torch::Tensor>& params);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_TENSORS_H_
