#ifndef GRAPHSHARD_CLIENT_DATA_TYPES_H_
#define GRAPHSHARD_CLIENT_DATA_TYPES_H_

// The trainer's plain data types: what a partition server says about its graph
// (ServerMetadata) and a decoded minibatch (MinibatchData). Plain structs, no gRPC, no protobuf,
// no Torch: the models and the Torch boundary (tensors.h) include this, not the RPC client
// (batch_client.h), which produces them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/feature_dtype.h"

namespace graphshard::client {

struct NodeTypeInfo {
  std::string name;
  int64_t num_nodes = 0;
  int64_t feat_dim = 0;     // 0 = no features (the model learns an input vector)
  int64_t num_classes = 0;  // 0 = unlabelled
  bool has_time = false;    // node times (temporal seed times)
  // [num_parts + 1]: part p owns ids [part_offsets[p], part_offsets[p + 1]); empty from a
  // server that does not say.
  std::vector<int64_t> part_offsets{};
};

struct EdgeTypeInfo {
  std::string name;  // src__rel__dst
  int src = 0;       // index into ServerMetadata::node_types
  int dst = 0;
  // Link prediction: this part's supervision edges per split ("train", "val", "test"); empty
  // when the partition has no edge splits of this type.
  std::vector<std::pair<std::string, int64_t>> split_sizes{};
  bool has_time = false;  // edge times (constrained by temporal sampling)
};

// Temporal sampling (proto TemporalMode): off, in-edges of time <= the seed's, or < it.
enum class TemporalSampling { kOff, kAtOrBefore, kBefore };

struct ServerMetadata {
  int part = 0;
  int num_parts = 0;
  // The target (labelled) node type, summarised.
  int64_t num_nodes = 0;
  std::vector<int64_t> part_offsets;  // [num_parts + 1]
  int64_t feat_dim = 0;
  int64_t num_classes = 0;
  int64_t num_local_edges = 0;  // this part's in-edges (those it stores, by destination)
  std::string target_type;
  int target = 0;                        // index of target_type in node_types
  std::vector<NodeTypeInfo> node_types;  // manifest order (the order of a batch's blocks)
  std::vector<EdgeTypeInfo> edge_types;
  std::string host_id;     // equal to ours = same host (shared-memory batches)
  std::string shm_prefix;  // every segment the server names starts with it (shm::CheckSegmentName)
  // Not from the server: the key this client gave it (StreamBatchesRequest.shm_ring_key); the
  // segments it names for this client carry its tag (shm::TaggedSegmentName).
  std::string shm_key;
  bool heterogeneous() const { return node_types.size() > 1 || edge_types.size() > 1; }
};

using common::FeatureBytes;  // common/feature_dtype.h, shared with the server's engine
using common::FeatureDtype;

// Bytes inside a decoded minibatch; valid while the MinibatchData's `owner` lives.
struct ByteView {
  const char* data = nullptr;
  size_t size = 0;
};

struct NodeBlockData {
  std::string node_type;
  int64_t num_nodes = 0;
  int64_t feat_dim = 0;
  ByteView ids;       // int64 [num_nodes]; seeds first for the seed type
  ByteView features;  // [num_nodes, feat_dim] in MinibatchData::feature_dtype
  ByteView labels;    // int64 [num_nodes]
  // Rows per sampling hop, [hops + 1]: hop 0 (the seeds, for the seed type) first, then the
  // nodes each hop added, in row order (DecodeMinibatch checks they add up to num_nodes).
  std::vector<int64_t> num_sampled_nodes;
};

struct EdgeBlockData {
  std::string edge_type;
  int src_block = 0;  // index into MinibatchData::nodes
  int dst_block = 0;
  int64_t num_edges = 0;
  ByteView src;  // int64 [num_edges], rows of nodes[src_block]
  ByteView dst;  // int64 [num_edges], rows of nodes[dst_block]
  // Edges per hop, [hops], in row order: the num_sampled_edges[h] edges of hop h go into the
  // nodes of hop h (num_sampled_nodes[h] of dst_block) from nodes of hops <= h + 1
  // (DecodeMinibatch checks it). So the edges into the nodes of hops < k are the first
  // sum(num_sampled_edges[0..k)): what per-layer trimming relies on (tensors.h, LayerExtents).
  std::vector<int64_t> num_sampled_edges;
};

// A link batch's supervision edges (PyG's edge_label_index / edge_label): num_edges rows of
// the hop-0 nodes of nodes[src_block] and nodes[dst_block], labels float32 (1 positive, 0
// negative); positives first, then negative j of positive i at num_pos * (1 + j) + i.
struct LinkLabelData {
  std::string edge_type;  // empty: a node batch
  int edge_type_index = 0;
  int src_block = 0;
  int dst_block = 0;
  int64_t num_edges = 0;
  int64_t num_pos = 0;
  ByteView src;    // int64 [num_edges]
  ByteView dst;    // int64 [num_edges]
  ByteView label;  // float32 [num_edges]
};

// One sampled (heterogeneous) subgraph, decoded and validated, its arrays read in place: from
// the gRPC message, or from the shared-memory segment the server wrote it to (mapped here, its
// name already unlinked). The first batch_size rows of nodes[seed_block] are the seeds.
struct MinibatchData {
  int64_t batch_size = 0;
  int seed_block = 0;
  int64_t epoch = 0;
  int64_t batch_index = 0;
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
  // Asked without features (StreamOptions::without_features): every NodeBlockData::features
  // is empty, only the seeds' labels are set, and every id is inside its type's node range.
  bool features_omitted = false;
  bool shared_memory = false;  // arrays came through shared memory
  bool pinned = false;         // ... in a segment registered for DMA (trainer/host_register.h)
  std::vector<NodeBlockData> nodes;  // ServerMetadata::node_types order
  std::vector<EdgeBlockData> edges;
  // Link batches: batch_size is link.num_edges, and every endpoint is a hop-0 node.
  LinkLabelData link{};
  std::shared_ptr<const void> owner;  // keeps every ByteView alive
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_DATA_TYPES_H_
