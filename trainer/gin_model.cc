#include "trainer/gin_model.h"

#include "absl/status/status.h"

namespace graphshard::trainer {

GinImpl::GinImpl(const client::GraphTaskLayout& layout, int64_t in_channels,
                 int64_t hidden_channels, int64_t num_classes, int64_t num_layers, double dropout)
    : layout_(layout), dropout_(dropout) {
  mlps_ = register_module("mlps", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) {
    mlps_->push_back(torch::nn::Sequential(
        torch::nn::Linear(i == 0 ? in_channels : hidden_channels, hidden_channels),
        torch::nn::ReLU(), torch::nn::Linear(hidden_channels, hidden_channels)));
  }
  head1_ = register_module("head1", torch::nn::Linear(hidden_channels, hidden_channels));
  head2_ = register_module("head2", torch::nn::Linear(hidden_channels, num_classes));
}

torch::Tensor GinImpl::Forward(const BatchTensors& batch) {
  const EdgeTensors& edges = batch.edges[static_cast<size_t>(layout_.edge_type)];
  const EdgeTensors& member = batch.edges[static_cast<size_t>(layout_.membership)];
  torch::Tensor h = batch.x[static_cast<size_t>(layout_.node_type)];
  const int64_t n = h.size(0);
  // PyG's `batch` vector: the graph (row of the graph block = seed index) of every node.
  torch::Tensor graph_of =
      torch::zeros({n}, member.dst.options()).index_put_({member.src}, member.dst);
  const MatmulDtype dtype = compute_.matmul;
  auto linear = [dtype](torch::nn::LinearImpl& lin, const torch::Tensor& x) {
    return dtype == MatmulDtype::kFloat32 ? lin.forward(x)
                                          : MatmulWt(x, lin.weight, dtype) + lin.bias;
  };
  for (size_t i = 0; i < mlps_->size(); ++i) {
    torch::Tensor agg = torch::zeros_like(h).index_add_(0, edges.dst, h.index_select(0, edges.src));
    torch::nn::SequentialImpl& mlp = *mlps_[i]->as<torch::nn::SequentialImpl>();
    h = linear(mlp.at<torch::nn::LinearImpl>(2),
               torch::relu(linear(mlp.at<torch::nn::LinearImpl>(0), h + agg)));
    h = torch::dropout(torch::relu(h), dropout_, is_training());
  }
  torch::Tensor pooled =
      torch::zeros({batch.batch_size, h.size(1)}, h.options()).index_add_(0, graph_of, h);
  torch::Tensor z = torch::dropout(torch::relu(linear(*head1_, pooled)), dropout_, is_training());
  return linear(*head2_, z);
}

absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateGinModel(const client::ServerMetadata& md,
                                                             const client::ModelOptions& o) {
  absl::StatusOr<client::GraphTaskLayout> layout = client::FindGraphTask(md);
  if (!layout.ok()) return absl::InvalidArgumentError(layout.status().message());
  const int64_t in = md.node_types[static_cast<size_t>(layout->node_type)].feat_dim;
  const int64_t classes = md.node_types[static_cast<size_t>(md.target)].num_classes;
  return std::shared_ptr<GnnModelImpl>(
      std::make_shared<GinImpl>(*layout, in, o.hidden_channels, classes, o.num_layers, o.dropout));
}

}  // namespace graphshard::trainer
