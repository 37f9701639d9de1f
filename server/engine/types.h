#ifndef GRAPHSHARD_SERVER_ENGINE_TYPES_H_
#define GRAPHSHARD_SERVER_ENGINE_TYPES_H_

// Plain request/result structs of the sampling engine (no gRPC, no protobuf). Ids are per node
// type; edge types are named "<src>__<rel>__<dst>".

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/feature_dtype.h"
#include "common/thread_usage.h"

namespace graphshard::engine {

// Bounds enforced on every request (InvalidArgument beyond them); see docs/SERVER.md.
struct Limits {
  int64_t max_batch_size = 1 << 16;    // seeds of one minibatch
  int64_t max_request_ids = 1 << 24;   // ids in one SampleOneHop / GatherFeatures request
  int32_t max_fanout = 4096;           // largest fanout other than -1 (all)
  int32_t max_hops = 8;
  int64_t max_stream_seeds = 1 << 26;  // seeds of one epoch stream
  int64_t max_stream_epochs = 1 << 20; // epochs of one stream (StreamRequest::num_epochs)
  // The cost budget of one request (one minibatch, hop or gather), checked against an upper
  // bound computed before any work (request_cost.h): ResourceExhausted beyond it.
  int64_t max_request_nodes = int64_t{1} << 24;  // sampled nodes (all types, all trees)
  int64_t max_request_edges = int64_t{1} << 26;  // sampled edges
  int64_t max_request_bytes = int64_t{2} << 30;  // arrays built: ids, edges, feature rows
  int32_t max_neg_ratio = 1000;        // negatives per positive edge of a link stream
};

using common::FeatureDtype;  // common/feature_dtype.h, shared with the trainer

// Temporal sampling (docs/SERVER.md, "Temporal sampling"), as PyG's NeighborLoader with
// time_attr: a seed at time t keeps the in-edges of time <= t (kAtOrBefore, PyG's rule) or
// < t (kBefore, PyG's with input_time = t - 1 for integer times); every node sampled for a
// seed inherits the seed's time (disjoint trees). Edge types without times are not
// constrained.
enum class TemporalMode { kOff = 0, kAtOrBefore = 1, kBefore = 2 };
// Which eligible in-edges: uniformly drawn (PyG's temporal_strategy="uniform") or the
// `fanout` most recent ones ("last").
enum class TemporalStrategy { kUniform = 0, kLast = 1 };

struct HopItem {
  std::string edge_type;
  std::vector<int64_t> seeds;  // dst-type ids owned by the part asked
  int32_t fanout = -1;         // -1 = all neighbours
  uint64_t seed = 0;           // the draw for node v depends only on (seed, v)
  std::vector<int64_t> times{};  // temporal: one time per seed; empty otherwise
};

struct OneHopRequest {
  std::vector<HopItem> items;
  bool replace = false;
  TemporalMode temporal = TemporalMode::kOff;
  TemporalStrategy temporal_strategy = TemporalStrategy::kUniform;
};

struct HopResult {
  std::vector<int64_t> counts;     // [seeds]
  std::vector<int64_t> neighbors;  // [sum(counts)], src-type ids grouped by seed in order
};

struct TypedIds {
  std::string node_type;
  std::vector<int64_t> ids;
};

// Feature rows in `dtype`, raw little-endian bytes [n, feat_dim].
struct FeatureBlock {
  int64_t feat_dim = 0;
  std::vector<char> features;
  std::vector<int64_t> labels;  // [n]; -1 = unlabelled
  // Rows that live elsewhere (CachedPeers' answers to the engine: cached rows and the peer's
  // answer as received, never copied into one block): when not empty, row j is rows[j],
  // `features` is empty, and `keep` keeps every row pointed at alive (copies of the block stay
  // valid). Row() reads either kind.
  std::vector<const char*> rows;
  std::shared_ptr<const void> keep;

  const char* Row(int64_t j, int64_t row_bytes) const {
    return rows.empty() ? features.data() + j * row_bytes : rows[static_cast<size_t>(j)];
  }
  // Whether the block holds labels.size() rows of `row_bytes` (either kind).
  bool HasRowsOf(int64_t row_bytes) const {
    return rows.empty() ? std::ssize(features) == std::ssize(labels) * row_bytes
                        : rows.size() == labels.size();
  }
};

struct SamplingConfig {
  std::vector<int32_t> fanouts;                              // default per hop
  std::map<std::string, std::vector<int32_t>> edge_fanouts;  // per edge type, same hop count
  bool replace = false;
  bool disjoint = false;  // forced on by temporal sampling, as in PyG
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
  TemporalMode temporal = TemporalMode::kOff;
  TemporalStrategy temporal_strategy = TemporalStrategy::kUniform;
  // No feature rows in the batch, labels of the seeds only (-1 elsewhere): the client holds
  // the features (proto SamplingConfig.without_features).
  bool without_features = false;
};

// Link prediction (PyG's LinkNeighborLoader): a stream whose seeds are positions in the local
// part's edge split `split` of `edge_type` (common::EdgeShard::splits). Each batch: those
// positive edges, neg_ratio negatives per positive (its source, a drawn destination), the
// neighbourhoods of every endpoint sampled together, the positives kept out of message passing.
enum class NegativeSampling {
  kUniform,  // destination uniform over the destination type
  kDegree,   // destination in proportion to its number of training edges (dst_degree.npy)
};
struct LinkSampling {
  std::string edge_type;  // empty = a node stream
  std::string split = "train";
  int32_t neg_ratio = 1;
  NegativeSampling neg_sampling = NegativeSampling::kUniform;
  bool enabled() const { return !edge_type.empty(); }
};

// A link batch's supervision edges (PyG's edge_label_index, edge_label): positives first, then
// negative j of positive i at num_pos * (1 + j) + i; src / dst are rows of the hop-0 nodes of
// the edge type's source / destination node block.
struct LinkLabels {
  std::string edge_type;  // empty: not a link batch
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  std::vector<float> label;
  int64_t num_pos = 0;
};

struct Minibatch;

// Optional placement of a batch's feature rows (MinibatchRequest::place_features), so that
// they are written once, where they are sent from (the service: the batch's shared-memory
// segment). Called once per batch after sampling (ids, trees, edges final; labels sized) with
// the bytes of each node block's rows; returns one span of exactly that size per block. The
// memory must stay valid while the batch lives: keep its owner in batch.attachment.
using FeaturePlacer = std::function<absl::StatusOr<std::vector<absl::Span<char>>>(
    Minibatch& batch, const std::vector<size_t>& feature_bytes)>;

// Asked between hops and every few thousand nodes of a long loop; true = stop with Cancelled
// (the client went away). Unset: never cancelled.
using CancelFn = std::function<bool()>;

struct MinibatchRequest {
  std::string seed_type;       // empty = the part's target type
  std::vector<int64_t> seeds;  // distinct ids of seed_type owned by the local part
  // Temporal sampling: one time per seed (e.g. the seed edge's time for link prediction);
  // empty = the seeds' node times (nodes/<seed_type>/time.npy).
  std::vector<int64_t> seed_times{};
  SamplingConfig sampling;
  uint64_t seed = 0;
  FeaturePlacer place_features;  // unset: rows go into NodeBlock::features
  CancelFn cancelled;
};

struct NodeBlock {
  std::string node_type;
  std::vector<int64_t> ids;   // seeds first for the seed type
  std::vector<int64_t> tree;  // disjoint mode: seed index per node; empty otherwise
  int64_t feat_dim = 0;
  std::vector<char> features;  // [ids, feat_dim] in Minibatch::feature_dtype, unless placed:
  bool placed = false;         // the rows are in placed_features (a FeaturePlacer's memory)
  absl::Span<char> placed_features;
  std::vector<int64_t> labels;
  std::vector<int64_t> num_sampled_nodes;  // [hops + 1]
  absl::Span<const char> FeatureData() const {
    return placed ? absl::Span<const char>(placed_features) : absl::Span<const char>(features);
  }
};

struct EdgeBlock {
  std::string edge_type;
  std::vector<int64_t> src;  // index into the src type's NodeBlock::ids
  std::vector<int64_t> dst;  // index into the dst type's NodeBlock::ids
  std::vector<int64_t> num_sampled_edges;  // [hops]
};

// What building a batch cost its thread, per phase (statistics): sampling every hop, gathering
// the feature rows, and a stream's finisher (EpochStream::Hooks::finish, e.g. packing).
struct BuildProfile {
  common::ThreadUsage sample, gather, finish;
  // Calls to other parts' servers (engine::Peers; a same-host part read in-process is not one):
  // `peer_requests` requests in `peer_rounds` rounds, a round being one wait for every part
  // asked at once (a hop, the feature gather). PyG's distributed sampler waits once per edge
  // type per hop; this builder once per hop (docs/SERVER.md, "Round trips").
  int64_t peer_rounds = 0;
  int64_t peer_requests = 0;
};

// What a stream's finisher or FeaturePlacer attaches to a batch (Minibatch::attachment): the
// service's own kinds (server/shm_batch_writer.cc), opaque to the engine, which only carries
// and frees them with the batch.
class BatchPayload {
 public:
  virtual ~BatchPayload() = default;
};

// PyG NeighborLoader's output: per node type and per edge type, in manifest order.
struct Minibatch {
  int64_t batch_size = 0;
  std::string seed_type;
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
  bool features_omitted = false;  // SamplingConfig::without_features
  std::vector<NodeBlock> nodes;
  std::vector<EdgeBlock> edges;
  LinkLabels link{};  // link streams only
  // What a FeaturePlacer or a stream's finisher (EpochStream::Start) made of the batch on the
  // builder thread (the service: the batch's segment, then the packed message); null otherwise.
  std::shared_ptr<BatchPayload> attachment;
  BuildProfile profile;
  int64_t NumSampledEdges() const;
  int64_t PayloadBytes() const;
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_TYPES_H_
