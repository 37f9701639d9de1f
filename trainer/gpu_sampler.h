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

// The topology and the relabelling tables on one GPU.
class GpuGraph {
 public:
  // Copies `topology` to `device` (a CUDA device). FailedPrecondition where this build has no
  // sampling kernels; InvalidArgument for a graph of 2^31 nodes or more (rows are int32 here).
  static absl::StatusOr<std::shared_ptr<GpuGraph>> Create(const client::GraphTopology& topology,
                                                          torch::Device device);

  // The batch of `seeds` (distinct global ids) labelled `labels`, sampled with `batch_seed`
  // over `fanouts` (one per hop, -1 = all): x[0] holds the batch's global ids (x_are_ids), y
  // the labels, the edges and hop counts as a server's batch carries them. Queued on the
  // current CUDA stream (it waits for the counts of each hop). InternalError when a kernel
  // cannot be launched.
  absl::StatusOr<BatchTensors> Sample(const std::vector<int64_t>& seeds,
                                      const std::vector<int64_t>& labels, uint64_t batch_seed,
                                      const std::vector<int32_t>& fanouts, bool replace);

  int64_t num_nodes() const { return indptr_.size(0) - 1; }
  // GPU memory held: the CSC and the tables.
  int64_t bytes() const;

 private:
  explicit GpuGraph(torch::Device device) : device_(device) {}

  torch::Device device_;
  torch::Tensor indptr_;      // int64 [num_nodes + 1]
  torch::Tensor indices_;     // int32 [num_edges]: half the memory of int64 ids
  torch::Tensor row_of_;      // int32 [num_nodes], -1 between batches
  torch::Tensor first_edge_;  // int32 [num_nodes], INT32_MAX between batches
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

class GpuSampledStream : public TensorSource {
 public:
  GpuSampledStream(std::shared_ptr<GpuGraph> graph, GpuStreamPlan plan);
  absl::StatusOr<absl::optional<BatchTensors>> Next() override;

 private:
  std::shared_ptr<GpuGraph> graph_;
  const GpuStreamPlan plan_;
  int64_t epoch_;
  int64_t batch_;
  std::vector<int64_t> order_;  // positions into plan_.seeds, shuffled for epoch_
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_GPU_SAMPLER_H_
