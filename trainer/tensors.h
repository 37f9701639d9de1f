#ifndef GRAPHSHARD_TRAINER_TENSORS_H_
#define GRAPHSHARD_TRAINER_TENSORS_H_

// The trainer's one Torch boundary: decoded minibatches (bytes in a gRPC message or a shared-
// memory mapping) -> torch::Tensor, and model parameters <-> flat buffers for the communicator
// (and their collectives and fingerprint).
// Includes Torch: include only from the Torch files of trainer/ (model, pipeline, train loop).

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/communicator.h"
#include "client/data_types.h"
#include "client/feature_tiers.h"

namespace graphshard::trainer {

struct EdgeTensors {
  int src_type = 0;  // node type indexes (ServerMetadata::node_types)
  int dst_type = 0;
  torch::Tensor src;  // int64 [num_edges], rows of x[src_type]
  torch::Tensor dst;  // int64 [num_edges], rows of x[dst_type]
};

// A link batch's supervision edges (data_types.h, LinkLabelData): rows of the hop-0 nodes of
// x[src_type] / x[dst_type]; positives first.
struct LinkTensors {
  bool present = false;
  int src_type = 0;
  int dst_type = 0;
  int64_t num_pos = 0;
  torch::Tensor src;    // int64 [m]
  torch::Tensor dst;    // int64 [m]
  torch::Tensor label;  // float32 [m]
};

// A minibatch as tensors, one entry per node type / edge type in manifest order.
struct BatchTensors {
  // The seeds: the first batch_size rows of x[seed_type]. A link batch: every hop-0 node of the
  // seed type (its supervision edges' destination type), and y is empty.
  int64_t batch_size = 0;
  // The real seeds among them: batch_size, except in a padded batch (static_shapes.h), whose
  // batch_size is the seeds' capacity and whose labels past `seeds` are -100.
  int64_t seeds = 0;
  int seed_type = 0;
  std::vector<torch::Tensor> x;  // [n_t, feat_dim_t] float32 after ToFloatFeatures (16-bit as
                                 // sent before); [n_t, 0] for a type without features
  // The batch came without feature rows (MinibatchData::features_omitted): x[t] holds node
  // type t's global ids (int64 [n_t]) until the input pipeline gathers their rows from its
  // FeatureStore (feature_store.h) and clears this.
  bool x_are_ids = false;
  client::FeatureTierCounts tiers{};  // where the gathered rows came from (client/report.h)
  std::vector<int64_t> num_nodes;
  torch::Tensor y;  // int64 [batch_size]: labels of the seeds
  std::vector<EdgeTensors> edges;
  // Hop order (data_types.h): rows of node type t in hops < k are nodes_before_hop[t][k]
  // ([hops + 2], from 0 to num_nodes[t]); edges of type e in hops < k, edges_before_hop[e][k]
  // ([hops + 1]). Plain numbers: they stay on the host when the tensors move to a device.
  std::vector<std::vector<int64_t>> nodes_before_hop;
  std::vector<std::vector<int64_t>> edges_before_hop;
  LinkTensors link{};

  // Applies f to every tensor (x, y, edge indexes, link edges), e.g. a device copy.
  template <typename F>
  void ForEachTensor(F&& f) {
    for (torch::Tensor& t : x) f(t);
    f(y);
    for (EdgeTensors& e : edges) {
      f(e.src);
      f(e.dst);
    }
    if (link.present) {
      f(link.src);
      f(link.dst);
      f(link.label);
    }
  }
};

// What layer l of an L-layer message-passing model needs of a batch, for per-layer trimming
// (PyG's trim_to_layer, DGL's blocks): it reads the nodes of hops <= L - l (in_nodes rows of
// each type), computes only those of hops < L - l (out_nodes rows: the last layer, the seeds),
// over the edges into them (the first `edges` of each type). Prefixes, by the hop order.
struct LayerExtent {
  std::vector<int64_t> in_nodes;   // per node type
  std::vector<int64_t> out_nodes;  // per node type
  std::vector<int64_t> edges;      // per edge type
};

// [0, c0, c0 + c1, ...]: the prefix sums of per-hop counts (BatchTensors::nodes_before_hop).
std::vector<int64_t> PrefixSums(const std::vector<int64_t>& counts);

// The torch dtype of feature rows sent in `dtype`.
torch::Dtype TorchDtype(client::FeatureDtype dtype);

// One extent per layer, or none when the batch has fewer hops than `num_layers` (no trimming:
// every layer then runs over the whole batch).
std::vector<LayerExtent> LayerExtents(const BatchTensors& batch, int64_t num_layers);

// Tensors over the batch's own memory, without copying (each tensor keeps `batch.owner`, and so
// the message or the mapping, alive); an int64 array at an address not 8-aligned is copied.
// Features keep their transport dtype (float16/bfloat16 as sent). InvalidArgument if a seed's
// label is outside [0, num_classes) (an unlabelled node in a split, or the wrong label space);
// num_classes 0: not checked (full-graph inference reads unlabelled nodes too, label -1).
absl::StatusOr<BatchTensors> ToTensors(const client::MinibatchData& batch, int64_t num_classes);

// Converts 16-bit features to float32 in place (where the tensors are: on the GPU after the copy).
void ToFloatFeatures(BatchTensors& batch);

// All parameters' gradients (a missing one reads as zeros), flattened in order, on their device.
torch::Tensor FlattenGradients(const std::vector<torch::Tensor>& params);

// The model's parameters as consecutive slices of one tensor, and their gradients as slices of
// another (as DDP's gradient_as_bucket_view): zeroing the gradients, all-reducing them and the
// optimizer's step are then a few kernels over two tensors, not a few per parameter. The
// trainer's step was bound by the CPU launching kernels (tests/bench/RESULTS.md, "The C++ step
// profiled").
struct FlatParameters {
  torch::Tensor values;  // the optimizer's one parameter; its grad is `grads`
  torch::Tensor grads;   // autograd accumulates each parameter's gradient into its slice
};
// Copies `params`' values into `flat` (allocated on the first call) and makes every parameter a
// view of its slice, its gradient a view of the gradients' slice. Again after anything that
// gives a parameter new storage (a checkpoint's load). InvalidArgument when the parameters do
// not share one dtype and device.
absl::Status BindToFlat(const std::vector<torch::Tensor>& params, FlatParameters& flat);

// In-place SUM over ranks of a flat float tensor, through host memory when the communicator takes
// host buffers and the tensor is on a GPU. May return before the sum is done
// (Communicator::QueueAllReduce): only work queued on the device after it may read `flat`.
absl::Status QueueAllReduceSum(client::Communicator& comm, torch::Tensor& flat);
// Overwrites a flat float tensor with rank 0's.
absl::Status BroadcastFromRank0(client::Communicator& comm, torch::Tensor& flat);

// FNV-1a 64 over all parameters' bytes, in order: 16 lowercase hex digits.
std::string WeightsFingerprint(const std::vector<torch::Tensor>& params);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_TENSORS_H_
