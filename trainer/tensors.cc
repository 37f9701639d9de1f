#include "trainer/tensors.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/epoch_plan.h"
#include "common/status_macros.h"

namespace graphshard::trainer {

torch::Dtype TorchDtype(client::FeatureDtype d) {
  switch (d) {
    case client::FeatureDtype::kFloat16:
      return torch::kFloat16;
    case client::FeatureDtype::kBFloat16:
      return torch::kBFloat16;
    case client::FeatureDtype::kFloat32:
      break;
  }
  return torch::kFloat32;
}

namespace {

// A tensor over `view` that holds `owner`; copied when misaligned for its dtype.
torch::Tensor Over(const client::ByteView& view, std::vector<int64_t> sizes, torch::Dtype dtype,
                   const std::shared_ptr<const void>& owner) {
  const size_t align = torch::elementSize(dtype);
  void* data = const_cast<char*>(view.data);  // read-only use: nothing writes into batches
  if (view.size == 0) return torch::empty(sizes, dtype);
  torch::Tensor t = torch::from_blob(
      data, sizes, [owner](void*) {}, torch::TensorOptions().dtype(dtype));
  if (reinterpret_cast<uintptr_t>(data) % align != 0) return t.clone();
  return t;
}

}  // namespace

std::vector<int64_t> PrefixSums(const std::vector<int64_t>& counts) {
  std::vector<int64_t> prefix = {0};
  for (int64_t c : counts) prefix.push_back(prefix.back() + c);
  return prefix;
}

std::vector<LayerExtent> LayerExtents(const BatchTensors& batch, int64_t num_layers) {
  if (batch.nodes_before_hop.empty() || batch.edges_before_hop.size() != batch.edges.size()) {
    return {};
  }
  const int64_t hops = std::ssize(batch.nodes_before_hop[0]) - 2;
  if (hops < num_layers) return {};
  std::vector<LayerExtent> out(static_cast<size_t>(num_layers));
  for (int64_t l = 0; l < num_layers; ++l) {
    const auto k = static_cast<size_t>(num_layers - l);  // this layer's hops of edges
    LayerExtent& x = out[static_cast<size_t>(l)];
    for (const std::vector<int64_t>& rows : batch.nodes_before_hop) {
      x.in_nodes.push_back(rows[k + 1]);
      x.out_nodes.push_back(rows[k]);
    }
    for (const std::vector<int64_t>& edges : batch.edges_before_hop) x.edges.push_back(edges[k]);
  }
  return out;
}

absl::StatusOr<BatchTensors> ToTensors(const client::MinibatchData& batch, int64_t num_classes) {
  const bool link = !batch.link.edge_type.empty();
  const int seed_block = link ? batch.link.dst_block : batch.seed_block;
  const client::NodeBlockData& seeds = batch.nodes[static_cast<size_t>(seed_block)];
  for (int64_t i = 0; i < (link ? 0 : batch.batch_size); ++i) {
    int64_t label, id;
    std::memcpy(&label, seeds.labels.data + i * 8, 8);
    if (num_classes > 0 && (label < 0 || label >= num_classes)) {
      std::memcpy(&id, seeds.ids.data + i * 8, 8);
      return absl::InvalidArgumentError(
          absl::StrCat("seed ", id, " (", seeds.node_type, ") has label ", label,
                       ", outside [0, num_classes ", num_classes, ")"));
    }
  }
  try {
    BatchTensors t;
    t.batch_size = link ? seeds.num_sampled_nodes[0] : batch.batch_size;
    t.seeds = t.batch_size;
    t.seed_type = seed_block;
    const torch::Dtype fdtype = TorchDtype(batch.feature_dtype);
    t.x_are_ids = batch.features_omitted;
    for (const client::NodeBlockData& n : batch.nodes) {
      t.num_nodes.push_back(n.num_nodes);
      t.x.push_back(batch.features_omitted
                        ? Over(n.ids, {n.num_nodes}, torch::kInt64, batch.owner)
                        : Over(n.features, {n.num_nodes, n.feat_dim}, fdtype, batch.owner));
    }
    t.y = link ? torch::empty({0}, torch::kInt64)
               : Over(seeds.labels, {seeds.num_nodes}, torch::kInt64, batch.owner)
                     .slice(0, 0, batch.batch_size);
    if (link) {
      const client::LinkLabelData& l = batch.link;
      t.link = {.present = true,
                .src_type = l.src_block,
                .dst_type = l.dst_block,
                .num_pos = l.num_pos,
                .src = Over(l.src, {l.num_edges}, torch::kInt64, batch.owner),
                .dst = Over(l.dst, {l.num_edges}, torch::kInt64, batch.owner),
                .label = Over(l.label, {l.num_edges}, torch::kFloat32, batch.owner)};
    }
    for (const client::EdgeBlockData& e : batch.edges) {
      t.edges.push_back({e.src_block, e.dst_block,
                         Over(e.src, {e.num_edges}, torch::kInt64, batch.owner),
                         Over(e.dst, {e.num_edges}, torch::kInt64, batch.owner)});
    }
    for (const client::NodeBlockData& n : batch.nodes) {
      t.nodes_before_hop.push_back(PrefixSums(n.num_sampled_nodes));
    }
    for (const client::EdgeBlockData& e : batch.edges) {
      t.edges_before_hop.push_back(PrefixSums(e.num_sampled_edges));
    }
    return t;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("building minibatch tensors: ", e.what_without_backtrace()));
  }
}

void ToFloatFeatures(BatchTensors& batch) {
  for (torch::Tensor& x : batch.x) {
    if (x.scalar_type() != torch::kFloat32) x = x.to(torch::kFloat32);
  }
}

torch::Tensor FlattenGradients(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> parts;
  parts.reserve(params.size());
  for (const torch::Tensor& p : params) {
    parts.push_back(p.grad().defined() ? p.grad().reshape({-1})
                                       : torch::zeros({p.numel()}, p.options()));
  }
  return torch::cat(parts).contiguous();
}

absl::Status BindToFlat(const std::vector<torch::Tensor>& params, FlatParameters& flat) {
  torch::NoGradGuard no_grad;
  int64_t total = 0;
  for (const torch::Tensor& p : params) {
    if (p.scalar_type() != params[0].scalar_type() || p.device() != params[0].device()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the model's parameters mix dtypes or devices (", p.toString(), " on ",
          p.device().str(), ", ", params[0].toString(), " on ", params[0].device().str(), ")"));
    }
    total += p.numel();
  }
  if (!flat.values.defined()) {
    const auto options = params.empty() ? torch::TensorOptions() : params[0].options();
    flat.values = torch::empty({total}, options.requires_grad(false));
    flat.grads = torch::zeros({total}, options.requires_grad(false));
  }
  int64_t offset = 0;
  for (const torch::Tensor& p : params) {
    const int64_t n = p.numel();
    torch::Tensor slot = flat.values.slice(0, offset, offset + n);
    if (slot.data_ptr() != p.data_ptr()) slot.copy_(p.detach().reshape({-1}));  // else bound
    p.set_data(slot.view_as(p));
    p.mutable_grad() = flat.grads.slice(0, offset, offset + n).view_as(p);
    offset += n;
  }
  flat.values.set_requires_grad(true);
  flat.values.mutable_grad() = flat.grads;
  return absl::OkStatus();
}

namespace {

enum class CollectiveOp { kQueuedSum, kBroadcast };

absl::Status Collective(client::Communicator& comm, torch::Tensor& flat, CollectiveOp op) {
  if (comm.world_size() == 1) return absl::OkStatus();
  const bool via_host = comm.float_memory() == client::MemorySpace::kHost && !flat.is_cpu();
  torch::Tensor buf = via_host ? flat.to(torch::kCPU).contiguous() : flat.contiguous();
  absl::Span<float> span(buf.data_ptr<float>(), static_cast<size_t>(buf.numel()));
  switch (op) {
    case CollectiveOp::kQueuedSum:
      RETURN_IF_ERROR(comm.QueueAllReduce(span, client::ReduceOp::kSum));
      break;
    case CollectiveOp::kBroadcast:
      RETURN_IF_ERROR(comm.Broadcast(span, 0));
      break;
  }
  if (via_host || !buf.is_same(flat)) flat.copy_(buf);
  return absl::OkStatus();
}

}  // namespace

absl::Status QueueAllReduceSum(client::Communicator& comm, torch::Tensor& flat) {
  return Collective(comm, flat, CollectiveOp::kQueuedSum);
}

absl::Status BroadcastFromRank0(client::Communicator& comm, torch::Tensor& flat) {
  return Collective(comm, flat, CollectiveOp::kBroadcast);
}

std::string WeightsFingerprint(const std::vector<torch::Tensor>& params) {
  client::Fnv1a64 h;
  for (const torch::Tensor& p : params) {
    torch::Tensor c = p.detach().to(torch::kCPU).contiguous();
    h.Update(c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size());
  }
  return h.Hex();
}

}  // namespace graphshard::trainer
