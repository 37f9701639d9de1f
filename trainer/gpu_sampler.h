#ifndef GRAPHSHARD_TRAINER_GPU_SAMPLER_H_
#define GRAPHSHARD_TRAINER_GPU_SAMPLER_H_

// Sampling on the GPU (--sampler gpu): the trainer holds the graph's whole topology (a CSC of
// every in-edge, read from the servers once: client/graph_topology.h) on its GPU and samples
// its training batches there, so that the servers build none. Each batch is the one the
// trainer's server stream would have sent: the same seeds (common/batch_order.h: the shard
// shuffled per epoch, cut in batches, wrapped), the same draws (SplitMix64 per node and hop,
// Floyd's algorithm) and the same rows in the same order (first meeting), without feature rows
// (x holds ids; the feature store gathers them). Why: with every row on the GPU, the servers'
// sampling CPU bounded the epoch (tests/bench/RESULTS.md, "what bounds 1 -> 2 GPUs now").
// Homogeneous graphs, node classification, no temporal or disjoint sampling (EpochLoop refuses
// the others). Includes Torch. Not thread-safe: one pipeline thread samples.
// Tables: GpuSampleLane's two int32 per node, per lane, per stream of the trainer.

#include <c10/core/Stream.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "client/graph_topology.h"
#include "trainer/input_pipeline.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

// The topology for one GPU's sampling lanes: in that GPU's memory, or (`on_host`,
// --sampler-topology host) its sources in page-locked host memory that the sampling kernels
// read in place over PCIe (the read's own array, registered with CUDA: no copy, no GPU memory
// for them); the offsets (8 bytes per node) stay on the GPU either way. Each pick reads one
// source id.
class GpuGraph {
 public:
  // Takes `topology` to `device` (a CUDA device), its sources registered in place where
  // `on_host`. FailedPrecondition where this build has no sampling kernels; InvalidArgument for
  // a graph of 2^31 nodes or more (rows are int32 here); ResourceExhausted where the GPU memory
  // or the registration fails.
  static absl::StatusOr<std::shared_ptr<GpuGraph>> Create(client::GraphTopology topology,
                                                          torch::Device device,
                                                          bool on_host = false);
  ~GpuGraph();
  GpuGraph(const GpuGraph&) = delete;
  GpuGraph& operator=(const GpuGraph&) = delete;

  int64_t num_nodes() const { return num_nodes_; }
  torch::Device device() const { return device_; }
  bool on_host() const { return on_host_; }
  // Memory held by the CSC on the GPU, and in page-locked host memory (each lane adds 8 bytes
  // of GPU memory per node: GpuSampleLane).
  int64_t device_bytes() const { return 8 * (num_nodes_ + 1) + (on_host_ ? 0 : 4 * num_edges_); }
  int64_t host_bytes() const { return on_host_ ? 4 * num_edges_ : 0; }
  // Where the kernels read them: int64 [num_nodes + 1], int32 [num_edges].
  const int64_t* indptr() const { return indptr_ptr_; }
  const int32_t* indices() const { return indices_ptr_; }

 private:
  explicit GpuGraph(torch::Device device) : device_(device) {}

  torch::Device device_;
  int64_t num_nodes_ = 0;
  int64_t num_edges_ = 0;
  bool on_host_ = false;
  torch::Tensor indptr_;               // on the device
  torch::Tensor indices_;              // on the device unless on_host; int32: half of int64
  std::vector<int32_t> host_indices_;  // on_host: registered (host_register.h) while held
  bool registered_ = false;
  const int64_t* indptr_ptr_ = nullptr;
  const int32_t* indices_ptr_ = nullptr;
};

// Samples one batch at a time on a CUDA stream of its own, with relabelling tables of its own
// (row_of, first_edge: int32 per node of the graph), so that several lanes sample at once: a
// batch is a chain of ~40 small kernels whose links each wait their turn on a GPU busy with
// training steps, and two lanes overlap two chains (measured, in different calls: 1.6 against
// 1.9 ms a batch with static shapes, 0.8 against 1.0 eager; tests/bench/RESULTS.md, "The GPU
// sampler: one wait a batch").
class GpuSampleLane {
 public:
  // ResourceExhausted when the tables do not fit on the GPU.
  static absl::StatusOr<std::unique_ptr<GpuSampleLane>> Create(std::shared_ptr<GpuGraph> graph);
  // Waits for a batch still launched: its kernels read the graph, whose host memory (on_host)
  // is unregistered when the last lane lets it go.
  ~GpuSampleLane();
  GpuSampleLane(const GpuSampleLane&) = delete;
  GpuSampleLane& operator=(const GpuSampleLane&) = delete;

  // Queues the batch of `seeds` (distinct global ids) labelled `labels`, sampled with
  // `batch_seed` over `fanouts` (one per hop, -1 = all), on the lane's stream, and returns
  // without waiting (except for a hop with fanout -1 or a bound of 2^24 edges or more: then
  // for its count). InternalError when a kernel cannot be launched; ResourceExhausted for a
  // hop of 2^31 edges or more.
  absl::Status Launch(const std::vector<int64_t>& seeds, const std::vector<int64_t>& labels,
                      uint64_t batch_seed, const std::vector<int32_t>& fanouts, bool replace);
  // Waits for the launched batch and returns it, made on the current stream: x[0] holds the
  // batch's global ids (x_are_ids), y the labels, the edges and hop counts as a server's batch
  // carries them. FailedPrecondition when no batch was launched.
  absl::StatusOr<BatchTensors> Finish();

 private:
  GpuSampleLane(std::shared_ptr<GpuGraph> graph, c10::Stream stream)
      : graph_(std::move(graph)), stream_(stream) {}
  // After a refused hop: the rows set so far back to -1 (waits for their counts).
  void ClearRows();

  const std::shared_ptr<GpuGraph> graph_;
  const c10::Stream stream_;
  torch::Tensor row_of_;      // int32 [num_nodes], -1 between batches
  torch::Tensor first_edge_;  // int32 [num_nodes], INT32_MAX between batches
  // Page-locked: the batch's seeds, labels and initial sizes (one copy to the GPU), and its
  // sizes back (one copy to the host).
  torch::Tensor staging_;
  torch::Tensor sizes_back_;

  // The launched batch (Launch to Finish): its tensors at their bounds, on the lane's stream.
  bool launched_ = false;
  int64_t batch_ = 0;
  int64_t hops_ = 0;
  torch::Tensor on_device_;  // seeds, labels, sizes (gpu_sample_kernel.h, HopSizes)
  std::vector<torch::Tensor> node_parts_, src_parts_, dst_parts_;
};

// One trainer shard's training batches over epochs, cut and sampled as a server's epoch
// stream would (server/engine/epoch_stream.h, with shuffle on): epochs epoch ..
// epoch + num_epochs - 1, num_batches each, the first from first_batch.
struct GpuStreamPlan {
  std::vector<int64_t> seeds;   // the shard
  std::vector<int64_t> labels;  // of each seed
  uint64_t shuffle_seed = 0;
  int64_t batch_size = 0;
  int64_t epoch = 0;
  int64_t first_batch = 0;
  int64_t num_batches = 0;
  int64_t num_epochs = 1;
  std::vector<int32_t> fanouts;
  bool replace = false;
};

// Batches are launched kLanes ahead on as many lanes, in order, and finished in order.
class GpuSampledStream : public TensorSource {
 public:
  static constexpr int kLanes = 2;

  // ResourceExhausted when the lanes' tables do not fit on the GPU.
  static absl::StatusOr<std::unique_ptr<GpuSampledStream>> Create(std::shared_ptr<GpuGraph> graph,
                                                                  GpuStreamPlan plan);
  absl::StatusOr<absl::optional<BatchTensors>> Next() override;

 private:
  explicit GpuSampledStream(GpuStreamPlan plan);
  // Launches the next batch of the plan on the next lane; false past the plan's end.
  absl::StatusOr<bool> LaunchNext();

  const GpuStreamPlan plan_;
  std::vector<std::unique_ptr<GpuSampleLane>> lanes_;
  int64_t epoch_;
  int64_t batch_;
  std::vector<int64_t> order_;  // positions into plan_.seeds, shuffled for epoch_
  int64_t launched_ = 0;        // batches launched; batch j went to lane j % kLanes
  int64_t finished_ = 0;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_GPU_SAMPLER_H_
