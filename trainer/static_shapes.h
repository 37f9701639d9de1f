#ifndef GRAPHSHARD_TRAINER_STATIC_SHAPES_H_
#define GRAPHSHARD_TRAINER_STATIC_SHAPES_H_

// --static-shapes: homogeneous node batches padded, where they are (the input pipeline pads
// them on the GPU after their copy, ids before their rows are gathered), to per-hop capacities that only grow (what graphshard.PadToStatic does for the Python loader,
// python/graphshard/static_shapes.py), so that a GPU step of one shape is captured once as a
// CUDA graph and replayed (graph_step.h) instead of launching ~160 kernels from the CPU.
//
// Padding never changes what a real node computes:
//   - hop h's nodes keep their order at the start of hop h's segment, which ends with at least
//     one padding node; a padding node's ids / feature row repeat the batch's first node's.
//   - hop h's edges keep their order (node indexes remapped) at the start of hop h's edge
//     segment; padding edges run from hop h's last padding node into hop h - 1's last padding
//     node. No edge touches a real node, so a real node's aggregation is the unpadded batch's.
//   - y holds the real seeds' labels, then -100 (cross_entropy's ignore_index): the mean loss
//     is over the real seeds alone. batch_size is the seeds' capacity, `seeds` the real ones.
//   - nodes_before_hop / edges_before_hop are the capacities', so per-layer trimming cuts at the
//     same hop boundaries.
// A capacity is set, and raised when a batch does not fit, to its count (+1 padding node) plus
// `headroom`, rounded up to `align`: a few shapes in the first batches, then one.
// Includes Torch. Not thread-safe: one pipeline thread pads (totals() from any thread).

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

class StaticShapes {
 public:
  explicit StaticShapes(double headroom = 0.05, int64_t align = 128);

  // `batch` padded as above, in new tensors where its tensors are (on a GPU: a few dozen small
  // copies queued on the current stream, from the input pipeline's thread). InvalidArgument
  // for a link or heterogeneous batch.
  absl::StatusOr<BatchTensors> Pad(const BatchTensors& batch);

  // Batches after the first that raised a capacity (each a new shape).
  int64_t grew() const { return grew_; }
  // What padding has cost so far: the batches' real rows and edges against the padded ones.
  // Any thread (the training loop reads it while the pipeline pads ahead).
  struct Totals {
    int64_t batches = 0;
    int64_t real_nodes = 0;
    int64_t padded_nodes = 0;
    int64_t real_edges = 0;
    int64_t padded_edges = 0;
  };
  Totals totals() const;
  const std::vector<int64_t>& node_capacities() const { return node_caps_; }  // per hop
  const std::vector<int64_t>& edge_capacities() const { return edge_caps_; }  // hop 1 first

 private:
  // Raises caps[h] where counts[h] + spare does not fit; true if any was raised.
  bool Grow(std::vector<int64_t>& caps, const std::vector<int64_t>& counts, int64_t spare) const;

  double headroom_;
  int64_t align_;
  std::vector<int64_t> node_caps_;
  std::vector<int64_t> edge_caps_;
  int64_t grew_ = 0;
  bool first_ = true;
  std::atomic<int64_t> batches_{0};
  std::atomic<int64_t> real_nodes_{0};
  std::atomic<int64_t> padded_nodes_{0};
  std::atomic<int64_t> real_edges_{0};
  std::atomic<int64_t> padded_edges_{0};
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_STATIC_SHAPES_H_
