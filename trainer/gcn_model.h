#ifndef GRAPHSHARD_TRAINER_GCN_MODEL_H_
#define GRAPHSHARD_TRAINER_GCN_MODEL_H_

// --model gcn: PyG's GCN (homogeneous graphs). Not thread-safe (torch::nn::Modules).

#include <torch/torch.h>

#include "trainer/model.h"

namespace graphshard::trainer {

// PyG's gcn_norm on a sampled subgraph of n nodes: a self loop added to every node, deg_i = 1 +
// in-degree of i, edge weight deg_src^-1/2 * deg_dst^-1/2. Edges with loops appended at the end.
// A conv over it computes num_nodes rows.
struct GcnGraph {
  torch::Tensor src, dst;  // int64 [E + n]
  torch::Tensor weight;    // float [E + n]
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // E
};
GcnGraph GcnNormalize(const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
                      int64_t num_nodes, const torch::TensorOptions& float_options);
// The first `num_edges` edges of `g` and the loops of its first `num_nodes` nodes, with g's
// weights (degrees of the whole graph): a trimmed layer's graph, when those edges are all the
// edges into those nodes (the hop order, tensors.h).
GcnGraph TrimGcnGraph(const GcnGraph& g, int64_t num_edges, int64_t num_nodes);

// PyG's GCNConv(in, out): out_i = sum_j w_ji (x_j W^T) + bias (a bias-free `lin`, then `bias`).
class GcnConvImpl : public torch::nn::Module {
 public:
  GcnConvImpl(int64_t in_channels, int64_t out_channels);
  // x [rows >= graph.num_nodes, in] -> [graph.num_nodes, out] (float32; `dtype`: model.h).
  torch::Tensor forward(const torch::Tensor& x, const GcnGraph& graph,
                        MatmulDtype dtype = MatmulDtype::kFloat32);
  torch::nn::Linear lin{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(GcnConv);

// PyG's GCN(in, hidden, num_layers, out, dropout): GCNConv, then ReLU and dropout between layers.
class GcnImpl : public GnnModelImpl {
 public:
  GcnImpl(int64_t in_channels, int64_t hidden_channels, int64_t out_channels, int64_t num_layers,
          double dropout);
  // Every node's output (untrimmed).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& edge_src,
                        const torch::Tensor& edge_dst);
  // The seeds' logits; trimmed per layer unless compute().trim is off, with the degrees of
  // the whole sampled subgraph either way.
  torch::Tensor Forward(const BatchTensors& batch) override;
  // L + 1 passes, so that each reads only rows the previous one wrote: with deg = 1 + the
  // whole graph's in-degree, pass 0 writes t_0 = deg^-1/2 (x W_0); pass k + 1 computes layer k,
  // z_k = deg^-1/2 (t_k + sum over in-neighbours of t_k) + b_k, and writes t_(k+1) =
  // deg^-1/2 (relu(z_k) W_(k+1)), or the logits z_(L-1). The embedding: relu(z_(L-2)).
  int64_t InferencePasses() const override { return static_cast<int64_t>(convs_->size()) + 1; }
  int64_t InferenceDim(int64_t pass) const override;
  InferenceRows InferPass(int64_t pass, const BatchTensors& block) override;

 private:
  // Conv i, then ReLU and dropout unless it is the last.
  torch::Tensor Layer(size_t i, const torch::Tensor& x, const GcnGraph& g);
  double dropout_;
  torch::nn::ModuleList convs_;
};
TORCH_MODULE(Gcn);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_GCN_MODEL_H_
