#include "trainer/gpu_sampler.h"

#include <climits>
#include <numeric>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/batch_order.h"
#include "common/status_macros.h"
#include "trainer/gpu_memory.h"
#include "trainer/gpu_sample_kernel.h"

namespace graphshard::trainer {
namespace {

int64_t* I64(torch::Tensor& t) { return t.data_ptr<int64_t>(); }
const int64_t* I64(const torch::Tensor& t) { return t.data_ptr<int64_t>(); }

absl::Status Launched(bool ok, const std::string& why) {
  return ok ? absl::OkStatus() : absl::InternalError(why);
}

}  // namespace

absl::StatusOr<std::shared_ptr<GpuGraph>> GpuGraph::Create(const client::GraphTopology& topology,
                                                           torch::Device device) {
  if (!GpuSampleKernelsBuilt()) {
    return absl::FailedPreconditionError(
        "--sampler gpu: this build has no CUDA kernels for sampling (no CUDA compiler was found)");
  }
  const int64_t n = std::ssize(topology.indptr) - 1;
  if (n < 0 || n >= INT_MAX || topology.indptr.back() != std::ssize(topology.indices)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sampler gpu: a topology of ", n, " nodes and ", topology.indices.size(),
                     " edges (up to 2^31 - 1 nodes, indptr ending at the edge count)"));
  }
  auto graph = std::shared_ptr<GpuGraph>(new GpuGraph(device));
  try {
    auto on = [&](const std::vector<int64_t>& v) {
      return torch::from_blob(const_cast<int64_t*>(v.data()), {std::ssize(v)}, torch::kInt64)
          .to(device);
    };
    graph->indptr_ = on(topology.indptr);
    // Narrowed on the host, so the GPU never holds the int64 copy (ids < 2^31: checked above).
    graph->indices_ = torch::from_blob(const_cast<int64_t*>(topology.indices.data()),
                                       {std::ssize(topology.indices)}, torch::kInt64)
                          .to(torch::kInt32)
                          .to(device);
    const auto i32 = torch::TensorOptions().dtype(torch::kInt32).device(device);
    graph->row_of_ = torch::full({n}, -1, i32);
    graph->first_edge_ = torch::full({n}, INT_MAX, i32);
  } catch (const c10::Error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("--sampler gpu: copying the topology (", topology.indices.size(),
                     " edges) to ", device.str(), ": ", e.what_without_backtrace()));
  }
  return graph;
}

int64_t GpuGraph::bytes() const {
  return indptr_.nbytes() + indices_.nbytes() + row_of_.nbytes() + first_edge_.nbytes();
}

absl::StatusOr<BatchTensors> GpuGraph::Sample(const std::vector<int64_t>& seeds,
                                              const std::vector<int64_t>& labels,
                                              uint64_t batch_seed,
                                              const std::vector<int32_t>& fanouts, bool replace) {
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device_);
  void* stream = CurrentCudaStream(device_.index());
  const RelabelTables tables{row_of_.data_ptr<int32_t>(), first_edge_.data_ptr<int32_t>()};
  std::string why;
  auto host = [](const std::vector<int64_t>& v) {
    return torch::from_blob(const_cast<int64_t*>(v.data()), {std::ssize(v)}, torch::kInt64).clone();
  };
  BatchTensors t;
  t.batch_size = std::ssize(seeds);
  t.seeds = t.batch_size;
  t.seed_type = 0;
  t.x_are_ids = true;
  t.y = host(labels).to(device_, /*non_blocking=*/true);
  std::vector<torch::Tensor> node_parts = {host(seeds).to(device_, /*non_blocking=*/true)};
  std::vector<torch::Tensor> src_parts, dst_parts;
  std::vector<int64_t> sampled_nodes = {t.batch_size}, sampled_edges;
  RETURN_IF_ERROR(
      Launched(LaunchSetRows(tables, I64(node_parts[0]), t.batch_size, 0, stream, &why), why));
  int64_t rows = t.batch_size;
  int64_t frontier_begin = 0;
  for (size_t hop = 0; hop < fanouts.size(); ++hop) {
    const torch::Tensor& frontier = node_parts.back();
    const int64_t n = frontier.size(0);
    const int32_t k = fanouts[hop];
    torch::Tensor deg = indptr_.index_select(0, frontier + 1) - indptr_.index_select(0, frontier);
    torch::Tensor count = k < 0     ? deg
                          : replace ? torch::where(deg > 0, torch::full_like(deg, k), deg)
                                    : deg.clamp_max(k);
    torch::Tensor offsets = torch::zeros({n + 1}, i64);
    offsets.slice(0, 1).copy_(count.cumsum(0));
    const int64_t num_edges = n == 0 ? 0 : offsets[n].item<int64_t>();  // waits for the counts
    if (num_edges >= INT_MAX) {
      // The rows set so far go back to -1, as the next batch expects them.
      const torch::Tensor so_far = torch::cat(node_parts);
      LaunchSetRows(tables, I64(so_far), so_far.size(0), -1, stream, &why);
      return absl::ResourceExhaustedError(absl::StrCat(
          "--sampler gpu: hop ", hop, " of a batch samples ", num_edges, " edges (at most 2^31)"));
    }
    torch::Tensor src = torch::empty({num_edges}, i64);
    torch::Tensor dst = torch::empty({num_edges}, i64);
    SampleHopArgs a;
    a.indptr = I64(indptr_);
    a.indices = indices_.data_ptr<int32_t>();
    a.frontier = I64(frontier);
    a.offsets = I64(offsets);
    a.n = n;
    a.frontier_begin = frontier_begin;
    a.fanout = k;
    a.replace = replace;
    a.item_seed = common::HopItemSeed(batch_seed, static_cast<int>(hop), 0);
    a.out_src = I64(src);
    a.out_dst = I64(dst);
    RETURN_IF_ERROR(Launched(LaunchSampleHop(a, stream, &why), why));
    // Relabel: the sources new to the batch take the next rows, in order of first meeting.
    torch::Tensor is_new = torch::empty({num_edges}, i64.dtype(torch::kInt32));
    RETURN_IF_ERROR(Launched(LaunchMarkFirst(tables, I64(src), num_edges, stream, &why), why));
    RETURN_IF_ERROR(Launched(
        LaunchFlagNew(tables, I64(src), num_edges, is_new.data_ptr<int32_t>(), stream, &why), why));
    torch::Tensor position = is_new.cumsum(0, torch::kInt64);
    const int64_t added = num_edges == 0 ? 0 : position[num_edges - 1].item<int64_t>();
    torch::Tensor new_ids = torch::empty({added}, i64);
    RETURN_IF_ERROR(Launched(LaunchAssign(tables, I64(src), num_edges, is_new.data_ptr<int32_t>(),
                                          I64(position), rows, I64(new_ids), stream, &why),
                             why));
    torch::Tensor src_rows = torch::empty({num_edges}, i64);
    RETURN_IF_ERROR(
        Launched(LaunchRows(tables, I64(src), num_edges, I64(src_rows), stream, &why), why));
    src_parts.push_back(src_rows);
    dst_parts.push_back(dst);
    sampled_edges.push_back(num_edges);
    sampled_nodes.push_back(added);
    frontier_begin = rows;
    rows += added;
    node_parts.push_back(new_ids);
  }
  torch::Tensor ids = torch::cat(node_parts);
  // Every row this batch set goes back to -1 for the next batch (first_edge already is back).
  RETURN_IF_ERROR(Launched(LaunchSetRows(tables, I64(ids), rows, -1, stream, &why), why));
  t.x = {ids};
  t.num_nodes = {rows};
  t.edges.push_back({0, 0, src_parts.empty() ? torch::empty({0}, i64) : torch::cat(src_parts),
                     dst_parts.empty() ? torch::empty({0}, i64) : torch::cat(dst_parts)});
  t.nodes_before_hop = {PrefixSums(sampled_nodes)};
  t.edges_before_hop = {PrefixSums(sampled_edges)};
  return t;
}

GpuSampledStream::GpuSampledStream(std::shared_ptr<GpuGraph> graph, GpuStreamPlan plan)
    : graph_(std::move(graph)),
      plan_(std::move(plan)),
      epoch_(plan_.epoch),
      batch_(plan_.first_batch) {}

absl::StatusOr<absl::optional<BatchTensors>> GpuSampledStream::Next() {
  if (batch_ >= plan_.num_batches) {
    ++epoch_;
    batch_ = 0;
    order_.clear();
  }
  if (epoch_ >= plan_.epoch + plan_.num_epochs || plan_.num_batches <= 0 || plan_.seeds.empty()) {
    return absl::optional<BatchTensors>();
  }
  if (order_.empty()) {
    order_.resize(plan_.seeds.size());
    std::iota(order_.begin(), order_.end(), int64_t{0});
    common::ShuffleForEpoch(order_, plan_.shuffle_seed, epoch_);
  }
  const std::vector<int64_t> positions = common::BatchOfOrder(order_, plan_.batch_size, batch_);
  std::vector<int64_t> seeds, labels;
  seeds.reserve(positions.size());
  labels.reserve(positions.size());
  for (int64_t p : positions) {
    seeds.push_back(plan_.seeds[static_cast<size_t>(p)]);
    labels.push_back(plan_.labels[static_cast<size_t>(p)]);
  }
  const uint64_t batch_seed = common::BatchSamplingSeed(plan_.shuffle_seed, epoch_, batch_);
  ++batch_;
  ASSIGN_OR_RETURN(BatchTensors t,
                   graph_->Sample(seeds, labels, batch_seed, plan_.fanouts, plan_.replace));
  return absl::optional<BatchTensors>(std::move(t));
}

}  // namespace graphshard::trainer
