#include "trainer/sage_model.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "trainer/gpu_memory.h"
#include "trainer/mean_aggregate_kernel.h"

namespace graphshard::trainer {

torch::Tensor MeanDivisor(const torch::Tensor& edge_dst, int64_t num_dst,
                          const torch::TensorOptions& options) {
  torch::Tensor deg = torch::zeros({num_dst}, options)
                          .index_add(0, edge_dst, torch::ones({edge_dst.size(0)}, options));
  return deg.clamp_min(1).unsqueeze(1);
}

namespace {

// MeanAggregate as one CUDA kernel each way (mean_aggregate_kernel.h), its backward by hand.
// Inputs: x [S, D] float32, edge_src / edge_dst int64 [E], divisor [>= num_dst, 1] float32, all
// contiguous on one GPU; the backward gives x's gradient only (edges and divisor have none).
class FusedMeanAggregate : public torch::autograd::Function<FusedMeanAggregate> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
                               const torch::Tensor& divisor, int64_t num_dst) {
    torch::Tensor out = torch::zeros({num_dst, x.size(1)}, x.options());
    Launch(LaunchMeanAggregate, x, edge_src, edge_dst, divisor, out);
    ctx->save_for_backward({edge_src, edge_dst, divisor});
    ctx->saved_data["rows"] = x.size(0);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor grad_out = grads[0].contiguous();
    torch::Tensor grad_x =
        torch::zeros({ctx->saved_data["rows"].toInt(), grad_out.size(1)}, grad_out.options());
    Launch(LaunchMeanAggregateBackward, grad_out, saved[0], saved[1], saved[2], grad_x);
    return {grad_x, {}, {}, {}, {}};
  }

 private:
  template <typename Launcher>
  static void Launch(Launcher launcher, const torch::Tensor& in, const torch::Tensor& edge_src,
                     const torch::Tensor& edge_dst, const torch::Tensor& divisor,
                     torch::Tensor& out) {
    std::string why;
    const bool ok = launcher({.in = in.data_ptr<float>(),
                              .src = edge_src.data_ptr<int64_t>(),
                              .dst = edge_dst.data_ptr<int64_t>(),
                              .divisor = divisor.data_ptr<float>(),
                              .num_edges = edge_src.size(0),
                              .dim = in.size(1),
                              .out = out.data_ptr<float>()},
                             CurrentCudaStream(in.get_device()), &why);
    TORCH_CHECK(ok, why);  // a c10::Error, caught where the run catches torch's
  }
};

// Whether FusedMeanAggregate can take this call: torch's form otherwise (on the CPU, other
// dtypes, --deterministic: the kernel's atomic adds vary the order of a row's terms).
bool CanFuse(const torch::Tensor& x, const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
             const torch::Tensor& divisor) {
  return x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32 &&
         edge_src.scalar_type() == torch::kInt64 && edge_dst.scalar_type() == torch::kInt64 &&
         divisor.scalar_type() == torch::kFloat32 &&
         !at::globalContext().deterministicAlgorithms() && MeanAggregateKernelBuilt();
}

}  // namespace

torch::Tensor MeanAggregate(const torch::Tensor& x, const torch::Tensor& edge_src,
                            const torch::Tensor& edge_dst, int64_t num_dst,
                            const torch::Tensor& divisor, bool fused) {
  const int64_t n = num_dst >= 0 ? num_dst : x.size(0);
  const torch::Tensor div =
      divisor.defined() ? divisor.slice(0, 0, n) : MeanDivisor(edge_dst, n, x.options());
  if (fused && CanFuse(x, edge_src, edge_dst, div)) {
    return FusedMeanAggregate::apply(x.contiguous(), edge_src.contiguous(), edge_dst.contiguous(),
                                     div.contiguous(), n);
  }
  torch::Tensor sum =
      torch::zeros({n, x.size(1)}, x.options()).index_add(0, edge_dst, x.index_select(0, edge_src));
  return sum / div;
}

SageConvImpl::SageConvImpl(int64_t in_channels, int64_t out_channels)
    : SageConvImpl(in_channels, in_channels, out_channels) {}

SageConvImpl::SageConvImpl(int64_t in_src, int64_t in_dst, int64_t out_channels) {
  lin_l =
      register_module("lin_l", torch::nn::Linear(torch::nn::LinearOptions(in_src, out_channels)));
  lin_r = register_module(
      "lin_r", torch::nn::Linear(torch::nn::LinearOptions(in_dst, out_channels).bias(false)));
}

torch::Tensor SageConvImpl::forward(const torch::Tensor& x, const torch::Tensor& edge_src,
                                    const torch::Tensor& edge_dst) {
  return forward(x, x, edge_src, edge_dst);
}

torch::Tensor SageConvImpl::forward(const torch::Tensor& x_src, const torch::Tensor& x_dst,
                                    const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
                                    MatmulDtype dtype, const torch::Tensor& divisor,
                                    bool fused_aggregation) {
  const int64_t in = lin_l->weight.size(1);
  const int64_t out = lin_l->weight.size(0);
  const int64_t num_dst = x_dst.size(0);
  const bool fp32 = dtype == MatmulDtype::kFloat32;
  torch::Tensor neigh;
  if (out < in) {
    // mean(x_j) W^T == mean(x_j W^T): project first, so the E-row gather moves `out` columns
    // instead of `in` (1433 -> 64 on Cora). Same function, fewer bytes.
    neigh =
        MeanAggregate(MatmulWt(x_src, lin_l->weight, dtype), edge_src, edge_dst, num_dst, divisor,
                      fused_aggregation) +
        lin_l->bias;
  } else if (fp32) {
    neigh = lin_l->forward(
        MeanAggregate(x_src, edge_src, edge_dst, num_dst, divisor, fused_aggregation));
  } else {
    neigh = MatmulWt(MeanAggregate(x_src, edge_src, edge_dst, num_dst, divisor, fused_aggregation),
                     lin_l->weight, dtype) +
            lin_l->bias;
  }
  return neigh + (fp32 ? lin_r->forward(x_dst) : MatmulWt(x_dst, lin_r->weight, dtype));
}

GraphSageImpl::GraphSageImpl(const GraphSageOptions& options) : options_(options) {
  convs_ = register_module("convs", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.num_layers; ++i) {
    const int64_t in = i == 0 ? options.in_channels : options.hidden_channels;
    const int64_t out =
        i == options.num_layers - 1 ? options.out_channels : options.hidden_channels;
    convs_->push_back(SageConv(in, out));
  }
}

torch::Tensor GraphSageImpl::Layer(size_t i, const torch::Tensor& x_src, const torch::Tensor& x_dst,
                                   const torch::Tensor& edge_src, const torch::Tensor& edge_dst,
                                   const torch::Tensor& divisor) {
  torch::Tensor x = convs_[i]->as<SageConvImpl>()->forward(x_src, x_dst, edge_src, edge_dst,
                                                           compute_.matmul, divisor,
                                                           compute_.fused_aggregation);
  if (i + 1 < convs_->size()) {
    x = torch::relu(x);
    x = torch::dropout(x, options_.dropout, is_training());
  }
  return x;
}

torch::Tensor GraphSageImpl::forward(torch::Tensor x, const torch::Tensor& edge_src,
                                     const torch::Tensor& edge_dst) {
  // Every layer aggregates over the same edges into the same rows: one divisor.
  const torch::Tensor divisor = MeanDivisor(edge_dst, x.size(0), x.options());
  for (size_t i = 0; i < convs_->size(); ++i) x = Layer(i, x, x, edge_src, edge_dst, divisor);
  return x;
}

torch::Tensor GraphSageImpl::Forward(const BatchTensors& batch) {
  const EdgeTensors& e = batch.edges[0];
  const std::vector<LayerExtent> extents =
      compute_.trim ? LayerExtents(batch, options_.num_layers) : std::vector<LayerExtent>{};
  if (extents.empty()) return forward(batch.x[0], e.src, e.dst).slice(0, 0, batch.batch_size);
  // Layer i over the nodes within L - i hops, computing those within L - i - 1 (the last: the
  // seeds) from the edges into them: prefixes of the rows and edges (tensors.h).
  torch::Tensor x = batch.x[0].slice(0, 0, extents[0].in_nodes[0]);
  // The first layer's edges hold every edge into the rows any layer computes (MeanDivisor).
  const torch::Tensor divisor =
      MeanDivisor(e.dst.slice(0, 0, extents[0].edges[0]), extents[0].out_nodes[0], x.options());
  for (size_t i = 0; i < convs_->size(); ++i) {
    const LayerExtent& ext = extents[i];
    x = Layer(i, x, x.slice(0, 0, ext.out_nodes[0]), e.src.slice(0, 0, ext.edges[0]),
              e.dst.slice(0, 0, ext.edges[0]), divisor);
  }
  return x.slice(0, 0, batch.batch_size);
}

int64_t GraphSageImpl::InferenceDim(int64_t pass) const {
  return pass == options_.num_layers - 1 ? options_.out_channels : options_.hidden_channels;
}

InferenceRows GraphSageImpl::InferPass(int64_t pass, const BatchTensors& block) {
  const EdgeTensors& e = block.edges[0];
  const torch::Tensor& x = block.x[0];
  InferenceRows out;
  out.rows = Layer(static_cast<size_t>(pass), x, x.slice(0, 0, block.batch_size), e.src, e.dst);
  if (pass == options_.num_layers - 2) out.embedding = out.rows;
  return out;
}

HeteroSageImpl::HeteroSageImpl(const client::ServerMetadata& md, int64_t hidden_channels,
                               int64_t num_layers, double dropout, std::vector<int> outputs,
                               int64_t out_channels)
    : target_(md.target), num_layers_(num_layers), dropout_(dropout) {
  if (outputs.empty()) outputs.push_back(md.target);
  if (out_channels < 1) out_channels = md.node_types[static_cast<size_t>(md.target)].num_classes;
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
    const int64_t out = last ? out_channels : hidden_channels;
    std::vector<bool> next(types, false);
    for (size_t e = 0; e < md.edge_types.size(); ++e) {
      const client::EdgeTypeInfo& et = md.edge_types[e];
      if (!alive[static_cast<size_t>(et.src)] || !alive[static_cast<size_t>(et.dst)]) continue;
      if (last && std::find(outputs.begin(), outputs.end(), et.dst) == outputs.end()) continue;
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

namespace {

// A node type's input to a layer: its rows, or (a featureless type in the first layer) one
// learned row that every node of the type shares, never expanded into `rows` copies.
struct TypeInput {
  torch::Tensor x;    // [rows, d], or undefined
  torch::Tensor row;  // [1, d] when x is undefined
  int64_t rows = 0;
};

// sum over edges (j -> i) of `row`, divided by i's in-degree: `row` where i has an edge, else 0.
torch::Tensor MeanOfSharedRow(const torch::Tensor& row, const torch::Tensor& edge_dst,
                              int64_t num_dst) {
  torch::Tensor has_edge = torch::zeros({num_dst, 1}, row.options()).index_fill_(0, edge_dst, 1.0);
  return has_edge * row;
}

}  // namespace

// Per destination type t, the same function as summing one SageConv per edge type e into t:
//   sum_e [mean_e(x_src) W_l,e^T + b_e + x_t W_r,e^T]
// = sum_e mean_e(x_src) W_l,e^T + x_t (sum_e W_r,e)^T + sum_e b_e,
// so the root term is one matmul per type instead of one per edge type, and a featureless
// source type's mean is its shared row where a node has an edge of that type (no E x d gather
// of copies of one vector); a featureless destination's root term is one row, broadcast.
torch::Tensor HeteroSageImpl::Forward(const BatchTensors& batch) {
  return Run(batch)[static_cast<size_t>(target_)].slice(0, 0, batch.batch_size);
}

std::vector<torch::Tensor> HeteroSageImpl::EmbedSeeds(const BatchTensors& batch) {
  std::vector<torch::Tensor> h = Run(batch);
  for (size_t t = 0; t < h.size(); ++t) {
    if (h[t].defined()) h[t] = h[t].slice(0, 0, batch.nodes_before_hop[t][1]);
  }
  return h;
}

std::vector<torch::Tensor> HeteroSageImpl::Run(const BatchTensors& batch) {
  const size_t types = batch.x.size();
  // Trimmed (tensors.h, LayerExtents): layer l reads each type's rows of hops <= L - l, writes
  // those of hops < L - l, over each edge type's edges into them.
  const std::vector<LayerExtent> extents =
      compute_.trim ? LayerExtents(batch, num_layers_) : std::vector<LayerExtent>{};
  const bool trim = !extents.empty();
  const MatmulDtype dtype = compute_.matmul;
  std::vector<TypeInput> h(types);
  for (size_t t = 0; t < types; ++t) {
    h[t].rows = trim ? extents[0].in_nodes[t] : batch.num_nodes[t];
    if (input_vectors_[t].defined()) {
      h[t].row = input_vectors_[t].unsqueeze(0);
    } else {
      h[t].x = batch.x[t].slice(0, 0, h[t].rows);
    }
  }
  size_t c = 0;
  for (int64_t l = 0; l < num_layers_; ++l) {
    std::vector<torch::Tensor> neigh(types), root_weight(types), bias(types);
    std::vector<int64_t> out_rows(types, 0);
    for (; c < convs_.size() && convs_[c].layer == l; ++c) {
      const Conv& conv = convs_[c];
      const auto et = static_cast<size_t>(conv.edge_type);
      const auto src = static_cast<size_t>(conv.src);
      const auto dst = static_cast<size_t>(conv.dst);
      const EdgeTensors& e = batch.edges[et];
      const int64_t num_edges = trim ? extents[static_cast<size_t>(l)].edges[et] : e.src.size(0);
      const int64_t num_dst = trim ? extents[static_cast<size_t>(l)].out_nodes[dst] : h[dst].rows;
      const torch::Tensor edge_src = e.src.slice(0, 0, num_edges);
      const torch::Tensor edge_dst = e.dst.slice(0, 0, num_edges);
      const auto& m = static_cast<SageConvImpl&>(*conv.module);
      const torch::Tensor& w_l = m.lin_l->weight;
      torch::Tensor y;
      if (!h[src].x.defined()) {
        y = MeanOfSharedRow(MatmulWt(h[src].row, w_l, dtype), edge_dst, num_dst);
      } else if (w_l.size(0) < w_l.size(1)) {  // project first: fewer columns to gather
        y = MeanAggregate(MatmulWt(h[src].x, w_l, dtype), edge_src, edge_dst, num_dst, {},
                          compute_.fused_aggregation);
      } else {
        y = MatmulWt(
            MeanAggregate(h[src].x, edge_src, edge_dst, num_dst, {}, compute_.fused_aggregation),
            w_l, dtype);
      }
      neigh[dst] = neigh[dst].defined() ? neigh[dst] + y : y;
      root_weight[dst] =
          root_weight[dst].defined() ? root_weight[dst] + m.lin_r->weight : m.lin_r->weight;
      bias[dst] = bias[dst].defined() ? bias[dst] + m.lin_l->bias : m.lin_l->bias;
      out_rows[dst] = num_dst;
    }
    std::vector<TypeInput> next(types);
    for (size_t t = 0; t < types; ++t) {
      if (!neigh[t].defined()) continue;
      const torch::Tensor root =
          h[t].x.defined() ? MatmulWt(h[t].x.slice(0, 0, out_rows[t]), root_weight[t], dtype)
                           : MatmulWt(h[t].row, root_weight[t], dtype);
      torch::Tensor x = neigh[t] + root + bias[t];
      if (l + 1 < num_layers_) x = torch::dropout(torch::relu(x), dropout_, is_training());
      next[t] = {x, {}, out_rows[t]};
    }
    h = std::move(next);
  }
  std::vector<torch::Tensor> xs(types);
  for (size_t t = 0; t < types; ++t) xs[t] = h[t].x;
  return xs;
}

absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateSageModel(const client::ServerMetadata& md,
                                                              const client::ModelOptions& o) {
  if (md.heterogeneous()) {
    return std::shared_ptr<GnnModelImpl>(std::make_shared<HeteroSageImpl>(
        md, o.hidden_channels, o.num_layers, o.dropout, o.output_types, o.out_channels));
  }
  ASSIGN_OR_RETURN(const int64_t in, HomogeneousFeatureDim(md, "sage"));
  return std::shared_ptr<GnnModelImpl>(std::make_shared<GraphSageImpl>(GraphSageOptions{
      .in_channels = in,
      .hidden_channels = o.hidden_channels,
      .out_channels = o.out_channels > 0
                          ? o.out_channels
                          : md.node_types[static_cast<size_t>(md.target)].num_classes,
      .num_layers = o.num_layers,
      .dropout = o.dropout}));
}

}  // namespace graphshard::trainer
