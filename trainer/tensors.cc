#include "trainer/tensors.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graphshard::trainer {
namespace {

torch::Tensor FromInt64s(const std::vector<int64_t>& v) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(v.size())}, torch::kInt64);
  if (!v.empty()) std::memcpy(t.data_ptr<int64_t>(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

}  // namespace

absl::StatusOr<BatchTensors> ToTensors(const MinibatchData& batch, int64_t num_classes) {
  for (int64_t i = 0; i < batch.batch_size; ++i) {
    const int64_t label = batch.labels[static_cast<size_t>(i)];
    if (label < 0 || label >= num_classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("seed ", batch.node_ids[static_cast<size_t>(i)], " has label ", label,
                       ", outside [0, num_classes ", num_classes, ")"));
    }
  }
  try {
    BatchTensors t;
    t.batch_size = batch.batch_size;
    t.x = torch::empty({batch.num_nodes(), batch.feat_dim}, torch::kFloat32);
    if (!batch.features.empty()) {
      std::memcpy(t.x.data_ptr<float>(), batch.features.data(),
                  batch.features.size() * sizeof(float));
    }
    t.y = torch::empty({batch.batch_size}, torch::kInt64);
    if (batch.batch_size > 0) {
      std::memcpy(t.y.data_ptr<int64_t>(), batch.labels.data(),
                  static_cast<size_t>(batch.batch_size) * sizeof(int64_t));
    }
    t.edge_src = FromInt64s(batch.edge_src);
    t.edge_dst = FromInt64s(batch.edge_dst);
    return t;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("building minibatch tensors: ", e.what()));
  }
}

torch::Tensor FlattenParameters(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> parts;
  parts.reserve(params.size());
  for (const torch::Tensor& p : params) parts.push_back(p.detach().reshape({-1}));
  return torch::cat(parts).contiguous();
}

torch::Tensor FlattenGradients(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> parts;
  parts.reserve(params.size());
  for (const torch::Tensor& p : params) {
    parts.push_back(p.grad().defined() ? p.grad().reshape({-1}) : torch::zeros({p.numel()}));
  }
  return torch::cat(parts).contiguous();
}

void UnflattenIntoParameters(const torch::Tensor& flat, const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const torch::Tensor& p : params) {
    p.copy_(flat.slice(0, offset, offset + p.numel()).view_as(p));
    offset += p.numel();
  }
}

void UnflattenIntoGradients(const torch::Tensor& flat, const std::vector<torch::Tensor>& params) {
  int64_t offset = 0;
  for (const torch::Tensor& p : params) {
    torch::Tensor g = flat.slice(0, offset, offset + p.numel()).view_as(p);
    if (p.grad().defined()) {
      p.mutable_grad().copy_(g);
    } else {
      p.mutable_grad() = g.clone();
    }
    offset += p.numel();
  }
}

}  // namespace graphshard::trainer
