#ifndef GRAPHSHARD_TRAINER_MODEL_H_
#define GRAPHSHARD_TRAINER_MODEL_H_

// The trainer's models behind one interface: a torch::nn::Module that maps a minibatch to the
// logits of its seeds. `--model sage` on a homogeneous graph is GraphSage (sage_model.h), on a
// heterogeneous one HeteroSage; `--model gcn` is Gcn (homogeneous graphs). Parameters are
// created in a fixed order from torch's global generator (seed it first). Not thread-safe.

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/data_types.h"
#include "trainer/graph_task.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

class GnnModelImpl : public torch::nn::Module {
 public:
  // Logits of the seeds: [batch_size, num_classes].
  virtual torch::Tensor Forward(const BatchTensors& batch) = 0;
};

struct ModelOptions {
  std::string kind = "sage";  // sage | gcn | gin
  int64_t hidden_channels = 64;
  int64_t num_layers = 2;  // one per sampling hop; gin: GIN layers
  double dropout = 0.5;
};

// InvalidArgument for an unknown kind, gcn on a heterogeneous graph, or gin on a graph that is
// not a graph-classification dataset (graph_task.h).
absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateModel(const ServerMetadata& md,
                                                          const ModelOptions& options);

// PyG's gcn_norm on a sampled subgraph of n nodes: a self loop added to every node, deg_i = 1 +
// in-degree of i, edge weight deg_src^-1/2 * deg_dst^-1/2. Edges with loops appended at the end.
struct GcnGraph {
  torch::Tensor src, dst;  // int64 [E + n]
  torch::Tensor weight;    // float [E + n]
  int64_t num_nodes = 0;
};
GcnGraph GcnNormalize(const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
                      int64_t num_nodes, const torch::TensorOptions& float_options);

// PyG's GCNConv(in, out): out_i = sum_j w_ji (x_j W^T) + bias (a bias-free `lin`, then `bias`).
class GcnConvImpl : public torch::nn::Module {
 public:
  GcnConvImpl(int64_t in_channels, int64_t out_channels);
  torch::Tensor forward(const torch::Tensor& x, const GcnGraph& graph);
  torch::nn::Linear lin{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(GcnConv);

// PyG's GCN(in, hidden, num_layers, out, dropout): GCNConv, then ReLU and dropout between layers.
class GcnImpl : public GnnModelImpl {
 public:
  GcnImpl(int64_t in_channels, int64_t hidden_channels, int64_t out_channels, int64_t num_layers,
          double dropout);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& edge_src,
                        const torch::Tensor& edge_dst);
  torch::Tensor Forward(const BatchTensors& batch) override;

 private:
  double dropout_;
  torch::nn::ModuleList convs_;
};
TORCH_MODULE(Gcn);

// What PyG's to_hetero(GraphSAGE) builds: per layer, one SAGEConv((in_src, in_dst), out) per
// edge type, summed per destination type, then ReLU and dropout. A node type without features
// (feat_dim 0) starts from a learned vector (hidden_channels, N(0,1) init), the same for every
// node of the type (PyG users would add an nn.Embedding per node id; a per-type vector keeps the
// model independent of the graph's size). Layer l only has the edge types whose source type
// has a representation after layer l-1; the last layer only those into the target type.
class HeteroSageImpl : public GnnModelImpl {
 public:
  HeteroSageImpl(const ServerMetadata& md, int64_t hidden_channels, int64_t num_layers,
                 double dropout);
  torch::Tensor Forward(const BatchTensors& batch) override;

 private:
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

// Graph classification as PyG's GIN example on TU datasets (and the seed notebook's GIN with
// SumPooling): num_layers GINConv layers, each MLP((1 + eps) x_i + sum_{j -> i} x_j) with
// eps = 0 and MLP = Linear(in, hidden), ReLU, Linear(hidden, hidden), then ReLU and dropout;
// sum pooling per graph (global_add_pool); a head Linear(hidden, hidden), ReLU, dropout,
// Linear(hidden, classes). No batch norm, so every parameter is synchronised by the gradient
// all-reduce and ranks hold identical models. Forward returns [num graphs, classes].
class GinImpl : public GnnModelImpl {
 public:
  GinImpl(const GraphTaskLayout& layout, int64_t in_channels, int64_t hidden_channels,
          int64_t num_classes, int64_t num_layers, double dropout);
  torch::Tensor Forward(const BatchTensors& batch) override;

 private:
  GraphTaskLayout layout_;
  double dropout_ = 0;
  torch::nn::ModuleList mlps_;
  torch::nn::Linear head1_{nullptr}, head2_{nullptr};
};
TORCH_MODULE(Gin);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_MODEL_H_
