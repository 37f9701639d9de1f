#ifndef GRAPHSHARD_SERVER_ENGINE_TYPES_H_
#define GRAPHSHARD_SERVER_ENGINE_TYPES_H_

// Plain request/result structs of the sampling engine (no gRPC, no protobuf).

#include <cstdint>
#include <vector>

namespace graphshard::engine {

// Bounds enforced on every request (InvalidArgument beyond them); see docs/SERVER.md.
struct Limits {
  int64_t max_batch_size = 1 << 16;    // seeds of one minibatch
  int64_t max_request_ids = 1 << 24;   // ids in one SampleOneHop / GatherFeatures request
  int32_t max_fanout = 4096;           // largest fanout other than -1 (all)
  int32_t max_hops = 8;
};

struct OneHopRequest {
  std::vector<int64_t> seeds;  // global ids owned by the part asked
  int32_t fanout = -1;         // -1 = all neighbours
  bool replace = false;
  uint64_t seed = 0;
};

struct OneHopResult {
  std::vector<int64_t> counts;     // [seeds]
  std::vector<int64_t> neighbors;  // [sum(counts)], grouped by seed in request order
};

struct FeatureRows {
  int64_t feat_dim = 0;
  std::vector<float> features;  // [ids, feat_dim]
  std::vector<int64_t> labels;  // [ids]
};

struct MinibatchRequest {
  std::vector<int64_t> seeds;  // distinct global ids owned by the local part
  std::vector<int32_t> fanouts;
  bool replace = false;
  uint64_t seed = 0;
};

// PyG NeighborLoader's output for a homogeneous graph: node_ids[0, batch_size) are the seeds;
// edge i goes from node_ids[edge_src[i]] into node_ids[edge_dst[i]].
struct Minibatch {
  int64_t batch_size = 0;
  std::vector<int64_t> node_ids;
  int64_t feat_dim = 0;
  std::vector<float> features;
  std::vector<int64_t> labels;
  std::vector<int64_t> edge_src;
  std::vector<int64_t> edge_dst;
  std::vector<int64_t> num_sampled_nodes;  // [hops + 1]
  std::vector<int64_t> num_sampled_edges;  // [hops]
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_TYPES_H_
