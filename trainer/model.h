#ifndef GRAPHSHARD_TRAINER_MODEL_H_
#define GRAPHSHARD_TRAINER_MODEL_H_

// The trainer's models behind one interface: a torch::nn::Module that maps a minibatch to the
// logits of its seeds. Each model is in its own file (sage_model.h: GraphSAGE and heterogeneous
// GraphSAGE, gcn_model.h, gin_model.h) and built through the registry (model_registry.h).
// Not thread-safe.

#include <torch/torch.h>

#include "trainer/model_registry.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

class GnnModelImpl : public torch::nn::Module {
 public:
  // Logits of the seeds: [batch_size, num_classes].
  virtual torch::Tensor Forward(const BatchTensors& batch) = 0;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_MODEL_H_
