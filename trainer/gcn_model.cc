#include "trainer/gcn_model.h"

#include "common/status_macros.h"

namespace graphshard::trainer {

GcnGraph GcnNormalize(const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
                      int64_t num_nodes, const torch::TensorOptions& float_options) {
  torch::Tensor loops = torch::arange(num_nodes, edge_src.options());
  GcnGraph g;
  g.num_nodes = num_nodes;
  g.num_edges = edge_src.size(0);
  g.src = torch::cat({edge_src, loops});
  g.dst = torch::cat({edge_dst, loops});
  torch::Tensor deg = torch::zeros({num_nodes}, float_options)
                          .index_add(0, g.dst, torch::ones({g.dst.size(0)}, float_options));
  torch::Tensor inv_sqrt = deg.pow(-0.5);  // deg >= 1: every node has its loop
  g.weight = inv_sqrt.index_select(0, g.src) * inv_sqrt.index_select(0, g.dst);
  return g;
}

GcnGraph TrimGcnGraph(const GcnGraph& g, int64_t num_edges, int64_t num_nodes) {
  auto keep = [&](const torch::Tensor& t) {
    return torch::cat({t.slice(0, 0, num_edges), t.slice(0, g.num_edges, g.num_edges + num_nodes)});
  };
  GcnGraph out;
  out.num_nodes = num_nodes;
  out.num_edges = num_edges;
  out.src = keep(g.src);
  out.dst = keep(g.dst);
  out.weight = keep(g.weight);
  return out;
}

GcnConvImpl::GcnConvImpl(int64_t in_channels, int64_t out_channels) {
  lin = register_module(
      "lin", torch::nn::Linear(torch::nn::LinearOptions(in_channels, out_channels).bias(false)));
  bias = register_parameter("bias", torch::zeros({out_channels}));  // PyG: zeros
}

torch::Tensor GcnConvImpl::forward(const torch::Tensor& x, const GcnGraph& g, MatmulDtype dtype) {
  auto propagate = [&](const torch::Tensor& h) {
    return torch::zeros({g.num_nodes, h.size(1)}, h.options())
        .index_add(0, g.dst, h.index_select(0, g.src) * g.weight.unsqueeze(1));
  };
  auto linear = [&](const torch::Tensor& h) {
    return dtype == MatmulDtype::kFloat32 ? lin->forward(h) : MatmulWt(h, lin->weight, dtype);
  };
  // Linear maps commute with the weighted sum: gather the narrower side.
  if (lin->weight.size(0) <= lin->weight.size(1)) return propagate(linear(x)) + bias;
  return linear(propagate(x)) + bias;
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

torch::Tensor GcnImpl::Layer(size_t i, const torch::Tensor& x, const GcnGraph& g) {
  torch::Tensor h = convs_[i]->as<GcnConvImpl>()->forward(x, g, compute_.matmul);
  if (i + 1 < convs_->size()) h = torch::dropout(torch::relu(h), dropout_, is_training());
  return h;
}

torch::Tensor GcnImpl::forward(const torch::Tensor& x, const torch::Tensor& edge_src,
                               const torch::Tensor& edge_dst) {
  const GcnGraph g = GcnNormalize(edge_src, edge_dst, x.size(0), x.options());
  torch::Tensor h = x;
  for (size_t i = 0; i < convs_->size(); ++i) h = Layer(i, h, g);
  return h;
}

torch::Tensor GcnImpl::Forward(const BatchTensors& batch) {
  const EdgeTensors& e = batch.edges[0];
  const std::vector<LayerExtent> extents =
      compute_.trim ? LayerExtents(batch, static_cast<int64_t>(convs_->size()))
                    : std::vector<LayerExtent>{};
  if (extents.empty()) return forward(batch.x[0], e.src, e.dst).slice(0, 0, batch.batch_size);
  // The edge weights use the degrees in the whole sampled subgraph, as untrimmed: a source
  // node of the outermost hop has in-edges that no trimmed layer reads.
  const GcnGraph full = GcnNormalize(e.src, e.dst, batch.x[0].size(0), batch.x[0].options());
  torch::Tensor h = batch.x[0].slice(0, 0, extents[0].in_nodes[0]);
  for (size_t i = 0; i < convs_->size(); ++i) {
    h = Layer(i, h, TrimGcnGraph(full, extents[i].edges[0], extents[i].out_nodes[0]));
  }
  return h.slice(0, 0, batch.batch_size);
}

int64_t GcnImpl::InferenceDim(int64_t pass) const {
  const auto layers = static_cast<int64_t>(convs_->size());
  // Pass p writes what layer min(p, L - 1) outputs (t_p has layer p's width).
  const int64_t layer = pass < layers ? pass : layers - 1;
  return convs_->ptr<GcnConvImpl>(static_cast<size_t>(layer))->lin->weight.size(0);
}

InferenceRows GcnImpl::InferPass(int64_t pass, const BatchTensors& block) {
  const EdgeTensors& e = block.edges[0];
  const torch::Tensor& x = block.x[0];
  const int64_t seeds = block.batch_size;
  const auto layers = static_cast<int64_t>(convs_->size());
  // Every in-edge of a seed is in the block: 1 + its in-degree is its degree with the loop.
  const torch::Tensor inv_sqrt = torch::ones({seeds}, x.options())
                                     .index_add(0, e.dst, torch::ones({e.dst.size(0)}, x.options()))
                                     .pow(-0.5)
                                     .unsqueeze(1);
  auto project = [&](int64_t layer, const torch::Tensor& h) {
    return MatmulWt(h, convs_[static_cast<size_t>(layer)]->as<GcnConvImpl>()->lin->weight,
                    compute_.matmul);
  };
  InferenceRows out;
  if (pass == 0) {
    out.rows = inv_sqrt * project(0, x.slice(0, 0, seeds));
    return out;
  }
  const int64_t k = pass - 1;
  torch::Tensor sum = x.slice(0, 0, seeds).clone().index_add_(0, e.dst, x.index_select(0, e.src));
  torch::Tensor z = inv_sqrt * sum + convs_[static_cast<size_t>(k)]->as<GcnConvImpl>()->bias;
  if (k == layers - 1) {
    out.rows = z;
    return out;
  }
  torch::Tensor h = torch::relu(z);
  if (k == layers - 2) out.embedding = h;
  out.rows = inv_sqrt * project(k + 1, h);
  return out;
}

absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateGcnModel(const client::ServerMetadata& md,
                                                             const client::ModelOptions& o) {
  ASSIGN_OR_RETURN(const int64_t in, HomogeneousFeatureDim(md, "gcn"));
  const int64_t classes = md.node_types[static_cast<size_t>(md.target)].num_classes;
  return std::shared_ptr<GnnModelImpl>(
      std::make_shared<GcnImpl>(in, o.hidden_channels, classes, o.num_layers, o.dropout));
}

}  // namespace graphshard::trainer
