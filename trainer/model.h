#ifndef GRAPHSHARD_TRAINER_MODEL_H_
#define GRAPHSHARD_TRAINER_MODEL_H_

// The trainer's models behind one interface: a torch::nn::Module that maps a minibatch to the
// logits of its seeds. Each model is in its own file (sage_model.h: GraphSAGE and heterogeneous
// GraphSAGE, gcn_model.h, gin_model.h) and built through the registry (model_registry.h).
// Not thread-safe.

#include <torch/torch.h>

#include <vector>

#include "trainer/model_registry.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

// The dtype of a layer's matmul inputs. kBFloat16 is what autocast does for matmuls (inputs
// rounded to bfloat16, products accumulated in float32 by cuBLAS / oneDNN), made explicit in
// the layers so that the product comes back as float32: aggregation sums, GCN's normalisation,
// biases, the loss and the weights' master copies (and so Adam's state) stay float32.
enum class MatmulDtype { kFloat32, kBFloat16 };

// x W^T, without bias, in `dtype`; the result is float32.
inline torch::Tensor MatmulWt(const torch::Tensor& x, const torch::Tensor& weight,
                              MatmulDtype dtype) {
  if (dtype == MatmulDtype::kBFloat16) {
    return torch::matmul(x.to(torch::kBFloat16), weight.to(torch::kBFloat16).t())
        .to(torch::kFloat32);
  }
  return torch::matmul(x, weight.t());
}

// How a model computes its logits (not which function: trimming changes float rounding only).
struct ComputeOptions {
  bool trim = true;  // per-layer trimming (tensors.h, LayerExtents) where the model has it
  MatmulDtype matmul = MatmulDtype::kFloat32;
  // SAGE's mean aggregation as one CUDA kernel each way where it can run (a float32 CUDA input,
  // not --deterministic, a build with the kernel: mean_aggregate_kernel.h); else torch's form.
  bool fused_aggregation = true;
};

// One pass of full-graph inference (trainer/inference.h) over a block: the rows it computes
// for the block's seeds, and the last hidden layer's output for them where this pass has it.
struct InferenceRows {
  torch::Tensor rows;       // [batch_size, InferenceDim(pass)] float32
  torch::Tensor embedding;  // [batch_size, hidden] after its activation, or undefined
};

class GnnModelImpl : public torch::nn::Module {
 public:
  // Logits of the seeds: [batch_size, num_classes], float32.
  virtual torch::Tensor Forward(const BatchTensors& batch) = 0;
  // Link prediction: per node type, the outputs of its hop-0 nodes (undefined for types the
  // model does not embed). By default Forward's, for the seed type.
  virtual std::vector<torch::Tensor> EmbedSeeds(const BatchTensors& batch) {
    std::vector<torch::Tensor> out(batch.x.size());
    out[static_cast<size_t>(batch.seed_type)] = Forward(batch);
    return out;
  }

  // Full-graph inference, layer by layer (DistDGL's way): pass p reads, for every node, the
  // rows pass p - 1 wrote (pass 0: the features) over its whole in-neighbourhood (a one-hop
  // block with fanout -1, seeds first) and computes the seeds' rows: the next pass's input, or
  // after the last pass the logits. Evaluation mode (no dropout). 0 passes: the model has no
  // layer-wise form.
  virtual int64_t InferencePasses() const { return 0; }
  virtual int64_t InferenceDim(int64_t pass) const {
    (void)pass;
    return 0;
  }
  virtual InferenceRows InferPass(int64_t pass, const BatchTensors& block) {
    (void)pass, (void)block;
    return {};
  }

  void set_compute(const ComputeOptions& compute) { compute_ = compute; }
  const ComputeOptions& compute() const { return compute_; }

 protected:
  ComputeOptions compute_;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_MODEL_H_
