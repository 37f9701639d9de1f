#ifndef GRAPHSHARD_TRAINER_GIN_MODEL_H_
#define GRAPHSHARD_TRAINER_GIN_MODEL_H_

// --model gin (--task graph). Not thread-safe (a torch::nn::Module).

#include <torch/torch.h>

#include "client/graph_task.h"
#include "trainer/model.h"

namespace graphshard::trainer {

// Graph classification as PyG's GIN example on TU datasets (and the seed notebook's GIN with
// SumPooling): num_layers GINConv layers, each MLP((1 + eps) x_i + sum_{j -> i} x_j) with
// eps = 0 and MLP = Linear(in, hidden), ReLU, Linear(hidden, hidden), then ReLU and dropout;
// sum pooling per graph (global_add_pool); a head Linear(hidden, hidden), ReLU, dropout,
// Linear(hidden, classes). No batch norm, so every parameter is synchronised by the gradient
// all-reduce and ranks hold identical models. Forward returns [num graphs, classes].
class GinImpl : public GnnModelImpl {
 public:
  GinImpl(const client::GraphTaskLayout& layout, int64_t in_channels, int64_t hidden_channels,
          int64_t num_classes, int64_t num_layers, double dropout);
  torch::Tensor Forward(const BatchTensors& batch) override;

 private:
  client::GraphTaskLayout layout_;
  double dropout_ = 0;
  torch::nn::ModuleList mlps_;
  torch::nn::Linear head1_{nullptr}, head2_{nullptr};
};
TORCH_MODULE(Gin);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_GIN_MODEL_H_
