#include "trainer/gpu_sampler.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/batch_order.h"
#include "common/status_macros.h"
#include "trainer/gpu_memory.h"
#include "trainer/gpu_sample_kernel.h"
#include "trainer/host_register.h"

namespace graphshard::trainer {
namespace {

int64_t* I64(torch::Tensor& t) { return t.data_ptr<int64_t>(); }
const int64_t* I64(const torch::Tensor& t) { return t.data_ptr<int64_t>(); }

absl::Status Launched(bool ok, const std::string& why) {
  return ok ? absl::OkStatus() : absl::InternalError(why);
}

// A hop's arrays are sized to a bound of its count (its frontier's bound times the fanout) so
// that the host need not wait for the count; past this many entries, or for fanout -1, the
// host reads the true count first and sizes them to it.
constexpr int64_t kMaxBoundEntries = int64_t{1} << 24;

// The first counts[i] entries of each part (int64 on `device`), one after the other, made on
// the current stream; the parts are marked as read there.
torch::Tensor Trimmed(const std::vector<torch::Tensor>& parts, const std::vector<int64_t>& counts,
                      torch::Device device, const c10::Stream& current) {
  std::vector<torch::Tensor> kept;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].numel() > 0) parts[i].record_stream(current);
    kept.push_back(parts[i].slice(0, 0, counts[i]));
  }
  return kept.empty()
             ? torch::empty({0}, torch::TensorOptions().dtype(torch::kInt64).device(device))
             : torch::cat(kept);
}

}  // namespace

absl::StatusOr<std::shared_ptr<GpuGraph>> GpuGraph::Create(client::GraphTopology topology,
                                                           torch::Device device, bool on_host) {
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
  graph->num_nodes_ = n;
  graph->num_edges_ = std::ssize(topology.indices);
  graph->on_host_ = on_host;
  try {
    // The offsets on the GPU either way (8 bytes per node): a frontier node reads them twice.
    graph->indptr_ = torch::from_blob(topology.indptr.data(), {n + 1}, torch::kInt64).to(device);
    if (!on_host) {
      graph->indices_ =
          torch::from_blob(topology.indices.data(), {graph->num_edges_}, torch::kInt32).to(device);
    }
  } catch (const c10::Error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("--sampler gpu: copying the topology (", topology.indices.size(),
                     " edges) to ", device.str(), ": ", e.what_without_backtrace()));
  }
  graph->indptr_ptr_ = graph->indptr_.data_ptr<int64_t>();
  if (!on_host) {
    graph->indices_ptr_ = graph->indices_.data_ptr<int32_t>();
    return graph;
  }
  // The sources stay where the read put them, registered in place; an empty array (a graph
  // without edges) is neither registered nor read.
  graph->host_indices_ = std::move(topology.indices);
  if (graph->num_edges_ > 0) {
    std::string why;
    void* at =
        RegisterHostForDevice(graph->host_indices_.data(), 4 * graph->host_indices_.size(), &why);
    if (at == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("--sampler-topology host: page-locking the topology (", graph->num_edges_,
                       " edges) for ", device.str(), ": ", why));
    }
    graph->registered_ = true;
    graph->indices_ptr_ = static_cast<const int32_t*>(at);
  }
  return graph;
}

GpuGraph::~GpuGraph() {
  if (registered_) UnregisterHost(host_indices_.data());
}

absl::StatusOr<std::unique_ptr<GpuSampleLane>> GpuSampleLane::Create(
    std::shared_ptr<GpuGraph> graph) {
  const torch::Device device = graph->device();
  try {
    c10::impl::VirtualGuardImpl impl(device.type());
    // High priority, as the pipeline's copy stream: a batch's chain of small kernels runs as
    // soon as the GPU has room, not behind the training step's kernels.
    const c10::Stream stream = impl.getStreamFromGlobalPool(device, /*isHighPriority=*/true);
    auto lane = std::unique_ptr<GpuSampleLane>(new GpuSampleLane(graph, stream));
    const auto i32 = torch::TensorOptions().dtype(torch::kInt32).device(device);
    lane->row_of_ = torch::full({graph->num_nodes()}, -1, i32);
    lane->first_edge_ = torch::full({graph->num_nodes()}, INT_MAX, i32);
    return lane;
  } catch (const c10::Error& e) {
    return absl::ResourceExhaustedError(absl::StrCat("--sampler gpu: relabelling tables for ",
                                                     graph->num_nodes(), " nodes on ", device.str(),
                                                     ": ", e.what_without_backtrace()));
  }
}

GpuSampleLane::~GpuSampleLane() {
  if (!launched_) return;
  try {
    stream_.synchronize();
  } catch (const c10::Error&) {  // a failed device: nothing left to wait for
  }
}

absl::Status GpuSampleLane::Launch(const std::vector<int64_t>& seeds,
                                   const std::vector<int64_t>& labels, uint64_t batch_seed,
                                   const std::vector<int32_t>& fanouts, bool replace) {
  const torch::Device device = graph_->device();
  c10::StreamGuard on_lane(stream_);  // torch's work and ours go on the lane's stream
  if (launched_) {
    // The last batch was not finished (its launch failed): let it drain before reuse.
    stream_.synchronize();
    launched_ = false;
  }
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  void* stream = CurrentCudaStream(device.index());
  const RelabelTables tables{row_of_.data_ptr<int32_t>(), first_edge_.data_ptr<int32_t>()};
  std::string why;
  const int64_t hops = std::ssize(fanouts);
  const int64_t batch = std::ssize(seeds);
  // The batch's sizes on the GPU (gpu_sample_kernel.h, HopSizes): nodes[0 .. hops] (the seeds,
  // then each hop's new sources), edges[0 .. hops - 1], rows[0 .. hops] (after the seeds, then
  // after each hop). Seeds, labels and initial sizes go over in one copy from page-locked
  // memory; the last batch's copy is done (Finish waited for it).
  const int64_t num_sizes = 3 * hops + 2;
  const int64_t staged = 2 * batch + num_sizes;
  if (!staging_.defined() || staging_.size(0) < staged) {
    staging_ =
        torch::empty({staged}, torch::TensorOptions().dtype(torch::kInt64).pinned_memory(true));
  }
  if (!sizes_back_.defined() || sizes_back_.size(0) < num_sizes) {
    sizes_back_ =
        torch::empty({num_sizes}, torch::TensorOptions().dtype(torch::kInt64).pinned_memory(true));
  }
  int64_t* h = staging_.data_ptr<int64_t>();
  std::copy(seeds.begin(), seeds.end(), h);
  std::copy(labels.begin(), labels.end(), h + batch);
  std::fill(h + 2 * batch, h + staged, 0);
  h[2 * batch] = batch;                 // nodes[0]
  h[2 * batch + 2 * hops + 1] = batch;  // rows[0]
  on_device_ = staging_.slice(0, 0, staged).to(device, /*non_blocking=*/true);
  launched_ = true;
  batch_ = batch;
  hops_ = hops;
  torch::Tensor sizes = on_device_.slice(0, 2 * batch, staged);
  auto hop_sizes = [base = I64(sizes), hops](int64_t hop) {
    return HopSizes{base + hop, base + hops + 1 + hop, base + 2 * hops + 1 + hop};
  };
  // Each sized to a bound of its count (the frontier's bound times the fanout).
  node_parts_ = {on_device_.slice(0, 0, batch)};
  src_parts_.clear();
  dst_parts_.clear();
  RETURN_IF_ERROR(
      Launched(LaunchSetRows(tables, I64(node_parts_[0]), batch, 0, stream, &why), why));
  int64_t capacity = batch;
  for (int64_t hop = 0; hop < hops; ++hop) {
    const int32_t k = fanouts[static_cast<size_t>(hop)];
    SampleHopArgs a;
    a.indptr = graph_->indptr();
    a.indices = graph_->indices();
    a.frontier = I64(node_parts_.back());
    a.capacity = capacity;
    a.fanout = k;
    a.replace = replace;
    a.item_seed = common::HopItemSeed(batch_seed, static_cast<int>(hop), 0);
    a.sizes = hop_sizes(hop);
    torch::Tensor counts = torch::empty({capacity}, i64);
    RETURN_IF_ERROR(Launched(LaunchHopCounts(a, I64(counts), stream, &why), why));
    const torch::Tensor ends = counts.cumsum(0);
    a.ends = I64(ends);
    RETURN_IF_ERROR(Launched(LaunchHopEdges(a, stream, &why), why));
    int64_t edge_capacity = k < 0 ? -1 : capacity * k;
    if (edge_capacity < 0 || edge_capacity > kMaxBoundEntries) {
      // Every neighbour, or a bound too large to allocate: the hop's true count (a wait).
      edge_capacity = sizes[hops + 1 + hop].item<int64_t>();
      if (edge_capacity >= INT_MAX) {
        ClearRows();
        return absl::ResourceExhaustedError(absl::StrCat("--sampler gpu: hop ", hop,
                                                         " of a batch samples ", edge_capacity,
                                                         " edges (at most 2^31)"));
      }
    }
    torch::Tensor src = torch::empty({edge_capacity}, i64);
    torch::Tensor dst = torch::empty({edge_capacity}, i64);
    a.out_src = I64(src);
    a.out_dst = I64(dst);
    RETURN_IF_ERROR(Launched(LaunchSampleHop(a, edge_capacity, stream, &why), why));
    // Relabel: the sources new to the batch take the next rows, in order of first meeting.
    torch::Tensor is_new = torch::empty({edge_capacity}, i64.dtype(torch::kInt32));
    RETURN_IF_ERROR(
        Launched(LaunchMarkFirst(tables, I64(src), edge_capacity, a.sizes, stream, &why), why));
    RETURN_IF_ERROR(Launched(LaunchFlagNew(tables, I64(src), edge_capacity, a.sizes,
                                           is_new.data_ptr<int32_t>(), stream, &why),
                             why));
    const torch::Tensor position = is_new.cumsum(0, torch::kInt64);
    torch::Tensor new_ids = torch::empty({edge_capacity}, i64);
    RETURN_IF_ERROR(
        Launched(LaunchAssign(tables, I64(src), edge_capacity, a.sizes, is_new.data_ptr<int32_t>(),
                              I64(position), I64(new_ids), stream, &why),
                 why));
    torch::Tensor src_rows = torch::empty({edge_capacity}, i64);
    RETURN_IF_ERROR(Launched(
        LaunchRows(tables, I64(src), edge_capacity, a.sizes, I64(src_rows), stream, &why), why));
    src_parts_.push_back(src_rows);
    dst_parts_.push_back(dst);
    node_parts_.push_back(new_ids);
    capacity = edge_capacity;
  }
  // Every row this batch set goes back to -1, counted on the GPU (first_edge already is back):
  // the lane's next batch may be queued behind this one at once.
  for (int64_t hop = 0; hop <= hops; ++hop) {
    torch::Tensor& part = node_parts_[static_cast<size_t>(hop)];
    RETURN_IF_ERROR(Launched(
        LaunchClearRows(tables, I64(part), part.size(0), I64(sizes) + hop, stream, &why), why));
  }
  sizes_back_.slice(0, 0, num_sizes).copy_(sizes, /*non_blocking=*/true);
  return absl::OkStatus();
}

absl::StatusOr<BatchTensors> GpuSampleLane::Finish() {
  if (!launched_) return absl::FailedPreconditionError("GpuSampleLane::Finish: no batch launched");
  // The batch's one wait: the lane's stream holds only this batch (its next one is launched
  // after this returns), up to the copy of its sizes back.
  stream_.synchronize();
  launched_ = false;
  const torch::Device device = graph_->device();
  const c10::Stream current = c10::impl::VirtualGuardImpl(device.type()).getStream(device);
  const int64_t hops = hops_;
  const int64_t* got = sizes_back_.data_ptr<int64_t>();
  const std::vector<int64_t> sampled_nodes(got, got + hops + 1);
  const std::vector<int64_t> sampled_edges(got + hops + 1, got + 2 * hops + 1);
  BatchTensors t;
  t.batch_size = batch_;
  t.seeds = batch_;
  t.seed_type = 0;
  t.x_are_ids = true;
  on_device_.record_stream(current);
  t.y = on_device_.slice(0, batch_, 2 * batch_);
  t.x = {Trimmed(node_parts_, sampled_nodes, device, current)};
  t.num_nodes = {got[3 * hops + 1]};
  t.edges.push_back({0, 0, Trimmed(src_parts_, sampled_edges, device, current),
                     Trimmed(dst_parts_, sampled_edges, device, current)});
  t.nodes_before_hop = {PrefixSums(sampled_nodes)};
  t.edges_before_hop = {PrefixSums(sampled_edges)};
  node_parts_.clear();
  src_parts_.clear();
  dst_parts_.clear();
  on_device_ = torch::Tensor();
  return t;
}

void GpuSampleLane::ClearRows() {
  const torch::Tensor sizes = on_device_.slice(0, 2 * batch_).to(torch::kCPU);  // waits
  const std::vector<int64_t> counts(sizes.data_ptr<int64_t>(),
                                    sizes.data_ptr<int64_t>() + std::ssize(node_parts_));
  const torch::Tensor so_far = Trimmed(node_parts_, counts, graph_->device(), stream_);
  std::string ignored;  // a launch that fails here fails the run's next batch too
  LaunchSetRows({row_of_.data_ptr<int32_t>(), first_edge_.data_ptr<int32_t>()}, I64(so_far),
                so_far.size(0), -1, CurrentCudaStream(graph_->device().index()), &ignored);
  stream_.synchronize();
  launched_ = false;
}

absl::StatusOr<std::unique_ptr<GpuSampledStream>> GpuSampledStream::Create(
    std::shared_ptr<GpuGraph> graph, GpuStreamPlan plan) {
  auto stream = std::unique_ptr<GpuSampledStream>(new GpuSampledStream(std::move(plan)));
  for (int i = 0; i < kLanes; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<GpuSampleLane> lane, GpuSampleLane::Create(graph));
    stream->lanes_.push_back(std::move(lane));
  }
  return stream;
}

GpuSampledStream::GpuSampledStream(GpuStreamPlan plan)
    : plan_(std::move(plan)), epoch_(plan_.epoch), batch_(plan_.first_batch) {}

absl::StatusOr<absl::optional<BatchTensors>> GpuSampledStream::Next() {
  while (launched_ - finished_ < kLanes) {
    ASSIGN_OR_RETURN(const bool more, LaunchNext());
    if (!more) break;
  }
  if (finished_ == launched_) return absl::optional<BatchTensors>();
  GpuSampleLane& lane = *lanes_[static_cast<size_t>(finished_ % kLanes)];
  ++finished_;
  ASSIGN_OR_RETURN(BatchTensors t, lane.Finish());
  return absl::optional<BatchTensors>(std::move(t));
}

absl::StatusOr<bool> GpuSampledStream::LaunchNext() {
  if (batch_ >= plan_.num_batches) {
    ++epoch_;
    batch_ = 0;
    order_.clear();
  }
  if (epoch_ >= plan_.epoch + plan_.num_epochs || plan_.num_batches <= 0 || plan_.seeds.empty()) {
    return false;
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
  GpuSampleLane& lane = *lanes_[static_cast<size_t>(launched_ % kLanes)];
  RETURN_IF_ERROR(lane.Launch(seeds, labels, batch_seed, plan_.fanouts, plan_.replace));
  ++launched_;
  return true;
}

}  // namespace graphshard::trainer
