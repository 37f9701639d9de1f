#include "trainer/gcn_model.h"

#include "common/status_macros.h"

namespace graphshard::trainer {

GcnGraph GcnNormalize(const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
                      int64_t num_nodes, const torch::TensorOptions& float_options) {
  torch::Tensor loops = torch::arange(num_nodes, edge_src.options());
  GcnGraph g;
  g.num_nodes = num_nodes;
  g.src = torch::cat({edge_src, loops});
  g.dst = torch::cat({edge_dst, loops});
  torch::Tensor deg = torch::zeros({num_nodes}, float_options)
                          .index_add(0, g.dst, torch::ones({g.dst.size(0)}, float_options));
  torch::Tensor inv_sqrt = deg.pow(-0.5);  // deg >= 1: every node has its loop
  g.weight = inv_sqrt.index_select(0, g.src) * inv_sqrt.index_select(0, g.dst);
  return g;
}

GcnConvImpl::GcnConvImpl(int64_t in_channels, int64_t out_channels) {
  lin = register_module(
      "lin", torch::nn::Linear(torch::nn::LinearOptions(in_channels, out_channels).bias(false)));
  bias = register_parameter("bias", torch::zeros({out_channels}));  // PyG: zeros
}

torch::Tensor GcnConvImpl::forward(const torch::Tensor& x, const GcnGraph& g) {
  auto propagate = [&](const torch::Tensor& h) {
    return torch::zeros({g.num_nodes, h.size(1)}, h.options())
        .index_add(0, g.dst, h.index_select(0, g.src) * g.weight.unsqueeze(1));
  };
  // Linear maps commute with the weighted sum: gather the narrower side.
  if (lin->weight.size(0) <= lin->weight.size(1)) return propagate(lin->forward(x)) + bias;
  return lin->forward(propagate(x)) + bias;
}

GcnImpl::GcnImpl(int64_t in_channels, int64_t hidden_channels, int64_t out_channels,
                 int64_t num_layers, double dropout)
    : dropout_(dropout) {
  convs_ = register_module("convs", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) {
    const int64_t in = i == 0 ? in_channels : hidden_channels;
    const int64_t out = i == num_layers - 1 ? out_channels : hidden_channels;
    convs_->push_back(GcnConv(in, out));
  }
}

torch::Tensor GcnImpl::forward(const torch::Tensor& x, const torch::Tensor& edge_src,
                               const torch::Tensor& edge_dst) {
  const GcnGraph g = GcnNormalize(edge_src, edge_dst, x.size(0), x.options());
  torch::Tensor h = x;
  const size_t n = convs_->size();
  for (size_t i = 0; i < n; ++i) {
    h = convs_[i]->as<GcnConvImpl>()->forward(h, g);
    if (i + 1 < n) h = torch::dropout(torch::relu(h), dropout_, is_training());
  }
  return h;
}

torch::Tensor GcnImpl::Forward(const BatchTensors& batch) {
  return forward(batch.x[0], batch.edges[0].src, batch.edges[0].dst).slice(0, 0, batch.batch_size);
}

absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateGcnModel(const ServerMetadata& md,
                                                             const ModelOptions& o) {
  ASSIGN_OR_RETURN(const int64_t in, HomogeneousFeatureDim(md, "gcn"));
  const int64_t classes = md.node_types[static_cast<size_t>(md.target)].num_classes;
  return std::shared_ptr<GnnModelImpl>(
      std::make_shared<GcnImpl>(in, o.hidden_channels, classes, o.num_layers, o.dropout));
}

}  // namespace graphshard::trainer
