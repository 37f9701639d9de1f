// GCN, heterogeneous GraphSAGE and the model factory (GraphSAGE itself is in sage_model.cc).
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "trainer/model.h"
#include "trainer/sage_model.h"

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

HeteroSageImpl::HeteroSageImpl(const ServerMetadata& md, int64_t hidden_channels,
                               int64_t num_layers, double dropout)
    : target_(md.target), num_layers_(num_layers), dropout_(dropout) {
  const size_t types = md.node_types.size();
  std::vector<int64_t> dims(types);
  input_vectors_.resize(types);
  for (size_t t = 0; t < types; ++t) {
    dims[t] = md.node_types[t].feat_dim;
    if (dims[t] == 0) {
      input_vectors_[t] = register_parameter(absl::StrCat("input_", md.node_types[t].name),
                                             torch::randn({hidden_channels}));
      dims[t] = hidden_channels;
    }
  }
  std::vector<bool> alive(types, true);
  for (int64_t l = 0; l < num_layers; ++l) {
    const bool last = l == num_layers - 1;
    const int64_t out = last ? md.node_types[static_cast<size_t>(md.target)].num_classes
                             : hidden_channels;
    std::vector<bool> next(types, false);
    for (size_t e = 0; e < md.edge_types.size(); ++e) {
      const EdgeTypeInfo& et = md.edge_types[e];
      if (!alive[static_cast<size_t>(et.src)] || !alive[static_cast<size_t>(et.dst)]) continue;
      if (last && et.dst != md.target) continue;
      auto conv = std::make_shared<SageConvImpl>(dims[static_cast<size_t>(et.src)],
                                                 dims[static_cast<size_t>(et.dst)], out);
      register_module(absl::StrCat("convs_", l, "_", et.name), conv);
      convs_.push_back({static_cast<int>(l), static_cast<int>(e), et.src, et.dst, conv});
      next[static_cast<size_t>(et.dst)] = true;
    }
    alive = next;
    for (size_t t = 0; t < types; ++t) dims[t] = out;
  }
}

torch::Tensor HeteroSageImpl::Forward(const BatchTensors& batch) {
  const size_t types = batch.x.size();
  std::vector<torch::Tensor> h(types);
  for (size_t t = 0; t < types; ++t) {
    h[t] = input_vectors_[t].defined()
               ? input_vectors_[t].unsqueeze(0).expand({batch.num_nodes[t], -1})
               : batch.x[t];
  }
  size_t c = 0;
  for (int64_t l = 0; l < num_layers_; ++l) {
    std::vector<torch::Tensor> out(types);
    for (; c < convs_.size() && convs_[c].layer == l; ++c) {
      const Conv& conv = convs_[c];
      const EdgeTensors& e = batch.edges[static_cast<size_t>(conv.edge_type)];
      torch::Tensor y = static_cast<SageConvImpl&>(*conv.module)
                            .forward(h[static_cast<size_t>(conv.src)],
                                     h[static_cast<size_t>(conv.dst)], e.src, e.dst);
      torch::Tensor& acc = out[static_cast<size_t>(conv.dst)];
      acc = acc.defined() ? acc + y : y;
    }
    if (l + 1 < num_layers_) {
      for (torch::Tensor& t : out) {
        if (t.defined()) t = torch::dropout(torch::relu(t), dropout_, is_training());
      }
    }
    h = std::move(out);
  }
  return h[static_cast<size_t>(target_)].slice(0, 0, batch.batch_size);
}

GinImpl::GinImpl(const GraphTaskLayout& layout, int64_t in_channels, int64_t hidden_channels,
                 int64_t num_classes, int64_t num_layers, double dropout)
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
  torch::Tensor graph_of = torch::zeros({n}, member.dst.options()).index_put_({member.src}, member.dst);
  for (size_t i = 0; i < mlps_->size(); ++i) {
    torch::Tensor agg = torch::zeros_like(h).index_add_(0, edges.dst, h.index_select(0, edges.src));
    h = mlps_[i]->as<torch::nn::SequentialImpl>()->forward(h + agg);
    h = torch::dropout(torch::relu(h), dropout_, is_training());
  }
  torch::Tensor pooled =
      torch::zeros({batch.batch_size, h.size(1)}, h.options()).index_add_(0, graph_of, h);
  torch::Tensor z = torch::dropout(torch::relu(head1_->forward(pooled)), dropout_, is_training());
  return head2_->forward(z);
}

absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateModel(const ServerMetadata& md,
                                                          const ModelOptions& o) {
  const int64_t classes = md.node_types[static_cast<size_t>(md.target)].num_classes;
  if (o.kind == "gin") {
    absl::StatusOr<GraphTaskLayout> layout = FindGraphTask(md);
    if (!layout.ok()) return absl::InvalidArgumentError(layout.status().message());
    const int64_t in = md.node_types[static_cast<size_t>(layout->node_type)].feat_dim;
    return std::shared_ptr<GnnModelImpl>(std::make_shared<GinImpl>(
        *layout, in, o.hidden_channels, classes, o.num_layers, o.dropout));
  }
  if (o.kind == "sage" && md.heterogeneous()) {
    return std::shared_ptr<GnnModelImpl>(
        std::make_shared<HeteroSageImpl>(md, o.hidden_channels, o.num_layers, o.dropout));
  }
  if (md.heterogeneous()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model ", o.kind, " takes homogeneous graphs; this one has ", md.node_types.size(),
        " node types and ", md.edge_types.size(), " edge types (use --model sage)"));
  }
  const int64_t in = md.node_types[0].feat_dim;
  if (in < 1) {
    return absl::InvalidArgumentError("the graph's nodes have no features (feat_dim 0)");
  }
  if (o.kind == "sage") {
    return std::shared_ptr<GnnModelImpl>(std::make_shared<GraphSageImpl>(
        GraphSageOptions{.in_channels = in,
                         .hidden_channels = o.hidden_channels,
                         .out_channels = classes,
                         .num_layers = o.num_layers,
                         .dropout = o.dropout}));
  }
  if (o.kind == "gcn") {
    return std::shared_ptr<GnnModelImpl>(
        std::make_shared<GcnImpl>(in, o.hidden_channels, classes, o.num_layers, o.dropout));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown model '", o.kind, "'"));
}

}  // namespace graphshard::trainer
