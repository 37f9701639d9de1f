#ifndef GRAPHSHARD_TRAINER_SAGE_MODEL_H_
#define GRAPHSHARD_TRAINER_SAGE_MODEL_H_

// GraphSAGE as PyG's `GraphSAGE(in, hidden, num_layers, out, dropout)` built of `SAGEConv`
// with mean aggregation: out_i = lin_l(mean_{j -> i} x_j) + lin_r(x_i), lin_l with bias,
// lin_r without (root weight); a node without in-edges aggregates zeros. Between layers ReLU
// then dropout; the last layer has no activation. Parameters are registered in PyG's order
// (convs.<k>.lin_l.weight, .lin_l.bias, .lin_r.weight) with torch.nn.Linear's initialisation,
// which is what PyG's Linear uses too. On a heterogeneous graph --model sage is HeteroSage.
// Not thread-safe (torch::nn::Modules).

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "trainer/model.h"

namespace graphshard::trainer {

class SageConvImpl : public torch::nn::Module {
 public:
  SageConvImpl(int64_t in_channels, int64_t out_channels);
  // Bipartite (PyG's SAGEConv((in_src, in_dst), out)): lin_l takes source features, lin_r
  // destination features.
  SageConvImpl(int64_t in_src, int64_t in_dst, int64_t out_channels);
  // x [N, in], edge e from edge_src[e] into edge_dst[e] (int64 [E]) -> [N, out].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& edge_src,
                        const torch::Tensor& edge_dst);
  // x_src [S, in_src], x_dst [D, in_dst], edges from rows of x_src into rows of x_dst -> [D, out]
  // (float32; `dtype`: of the matmuls' inputs, model.h).
  // `divisor`: MeanDivisor of these edges, at least D rows (undefined: computed here).
  torch::Tensor forward(const torch::Tensor& x_src, const torch::Tensor& x_dst,
                        const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
                        MatmulDtype dtype = MatmulDtype::kFloat32,
                        const torch::Tensor& divisor = {}, bool fused_aggregation = false);
  torch::nn::Linear lin_l{nullptr};
  torch::nn::Linear lin_r{nullptr};
};
TORCH_MODULE(SageConv);

// Mean over in-neighbours: row i (of num_dst, default x's rows) is the mean of x[edge_src[e]]
// over edges e with edge_dst[e] == i, zero without in-edges. `divisor`: MeanDivisor of these
// edges with at least num_dst rows (its first num_dst are used), or undefined (computed here).
// `fused`: one CUDA kernel each way where it can run (ComputeOptions::fused_aggregation).
torch::Tensor MeanAggregate(const torch::Tensor& x, const torch::Tensor& edge_src,
                            const torch::Tensor& edge_dst, int64_t num_dst = -1,
                            const torch::Tensor& divisor = {}, bool fused = false);
// [num_dst, 1]: each destination's in-degree over `edge_dst`, at least 1 (MeanAggregate's
// divisor). A trimmed model's layers read prefixes of one batch's edges that hold every edge
// into the rows they compute, so one divisor over the first layer's edges serves them all.
torch::Tensor MeanDivisor(const torch::Tensor& edge_dst, int64_t num_dst,
                          const torch::TensorOptions& options);

struct GraphSageOptions {
  int64_t in_channels = 0;
  int64_t hidden_channels = 64;
  int64_t out_channels = 0;
  int64_t num_layers = 2;
  double dropout = 0.5;
};

class GraphSageImpl : public GnnModelImpl {
 public:
  explicit GraphSageImpl(const GraphSageOptions& options);
  // Logits for every node of the subgraph (untrimmed); callers keep the first batch_size rows.
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& edge_src,
                        const torch::Tensor& edge_dst);
  // A homogeneous batch: the seeds' logits; trimmed per layer unless compute().trim is off.
  torch::Tensor Forward(const BatchTensors& batch) override;
  // One pass per layer: conv l (and ReLU but the last) of the seeds; the embedding is the
  // output of the last hidden layer (pass L - 2).
  int64_t InferencePasses() const override { return options_.num_layers; }
  int64_t InferenceDim(int64_t pass) const override;
  InferenceRows InferPass(int64_t pass, const BatchTensors& block) override;

 private:
  // Conv i, then ReLU and dropout unless it is the last.
  torch::Tensor Layer(size_t i, const torch::Tensor& x_src, const torch::Tensor& x_dst,
                      const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
                      const torch::Tensor& divisor = {});
  GraphSageOptions options_;
  torch::nn::ModuleList convs_;
};
TORCH_MODULE(GraphSage);

// What PyG's to_hetero(GraphSAGE) builds: per layer, one SAGEConv((in_src, in_dst), out) per
// edge type, summed per destination type, then ReLU and dropout. A node type without features
// (feat_dim 0) starts from a learned vector (hidden_channels, N(0,1) init), the same for every
// node of the type (PyG users would add an nn.Embedding per node id; a per-type vector keeps the
// model independent of the graph's size). Layer l only has the edge types whose source type
// has a representation after layer l-1; the last layer only those into the target type.
// Trimmed per layer and node type (tensors.h, LayerExtents) unless compute().trim is off.
//
// For link prediction `outputs` names the node types whose last-layer outputs are needed (the
// last layer keeps the edge types into them) and `out_channels` their size; by default the
// target type and its classes.
class HeteroSageImpl : public GnnModelImpl {
 public:
  HeteroSageImpl(const client::ServerMetadata& md, int64_t hidden_channels, int64_t num_layers,
                 double dropout, std::vector<int> outputs = {}, int64_t out_channels = 0);
  torch::Tensor Forward(const BatchTensors& batch) override;
  std::vector<torch::Tensor> EmbedSeeds(const BatchTensors& batch) override;

 private:
  // Every layer; the last one's outputs per node type (undefined where none).
  std::vector<torch::Tensor> Run(const BatchTensors& batch);
  struct Conv {
    int layer = 0;
    int edge_type = 0;
    int src = 0, dst = 0;
    std::shared_ptr<torch::nn::Module> module;  // a SageConvImpl
  };
  int target_ = 0;
  int64_t num_layers_ = 0;
  double dropout_ = 0;
  std::vector<torch::Tensor> input_vectors_;  // per node type; undefined if it has features
  std::vector<Conv> convs_;
};
TORCH_MODULE(HeteroSage);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_SAGE_MODEL_H_
