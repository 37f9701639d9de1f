#ifndef GRAPHSHARD_TRAINER_BATCH_CLIENT_H_
#define GRAPHSHARD_TRAINER_BATCH_CLIENT_H_

// gRPC client of one partition server (PartitionService + grpc.health.v1), returning plain
// structs: the rest of the trainer never sees protobuf or gRPC types. Every unary RPC carries a
// deadline (ClientOptions::rpc_timeout_s), a stream one of rpc_timeout_s per batch it may carry.
// Responses are validated before they are returned, so a bad server answer is a DataLoss status
// naming the server, never a crash later.
// Thread-safe: several RPCs may be in flight on one client (gRPC stubs are thread-safe); one
// BatchStream is driven by one thread at a time.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "common/feature_dtype.h"
#include "rpc/options.h"
#include "shm/ring.h"

namespace graphshard::trainer {

struct NodeTypeInfo {
  std::string name;
  int64_t num_nodes = 0;
  int64_t feat_dim = 0;     // 0 = no features (the model learns an input vector)
  int64_t num_classes = 0;  // 0 = unlabelled
};

struct EdgeTypeInfo {
  std::string name;  // src__rel__dst
  int src = 0;       // index into ServerMetadata::node_types
  int dst = 0;
};

struct ServerMetadata {
  int part = 0;
  int num_parts = 0;
  // The target (labelled) node type, summarised.
  int64_t num_nodes = 0;
  std::vector<int64_t> part_offsets;  // [num_parts + 1]
  int64_t feat_dim = 0;
  int64_t num_classes = 0;
  std::string target_type;
  int target = 0;  // index of target_type in node_types
  std::vector<NodeTypeInfo> node_types;  // manifest order (the order of a batch's blocks)
  std::vector<EdgeTypeInfo> edge_types;
  std::string host_id;  // equal to ours = same host (shared-memory batches)
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
};

struct EdgeBlockData {
  std::string edge_type;
  int src_block = 0;  // index into MinibatchData::nodes
  int dst_block = 0;
  int64_t num_edges = 0;
  ByteView src;  // int64 [num_edges], rows of nodes[src_block]
  ByteView dst;  // int64 [num_edges], rows of nodes[dst_block]
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
  bool shared_memory = false;  // arrays came through shared memory
  bool pinned = false;         // ... in a segment registered for DMA (trainer/host_register.h)
  std::vector<NodeBlockData> nodes;  // ServerMetadata::node_types order
  std::vector<EdgeBlockData> edges;
  std::shared_ptr<const void> owner;  // keeps every ByteView alive
};

struct StreamOptions {
  std::vector<int64_t> seeds;  // of the target type, all owned by the server asked
  int64_t batch_size = 256;
  bool shuffle = true;
  uint64_t shuffle_seed = 0;
  int64_t epoch = 0;
  int64_t first_batch = 0;  // resume
  int64_t num_batches = 0;  // per epoch; 0 = ceil(seeds / batch_size); more wraps around
  // Epochs epoch .. epoch + num_epochs - 1 back to back in one stream (the first from
  // first_batch): the server builds the next epoch's first batches while this one ends.
  int64_t num_epochs = 1;
  // The stream's deadline allows rpc_timeout_s per batch; with several epochs, also this many
  // batches' worth per epoch for the pauses between them (the trainer's evaluation).
  int64_t pause_batches_per_epoch = 0;
  std::vector<int32_t> fanouts;
  bool replace = false;
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
  std::string client_host_id;  // equal to the server's: shared memory
  // Shared memory: at most this many of the stream's batches are alive at once in the client
  // (the server's ring of segments; proto StreamBatchesRequest.shm_ring). 0: no ring.
  int max_held_batches = 8;
};

struct ClientOptions {
  double rpc_timeout_s = 60;
  rpc::RpcOptions rpc;  // credentials and message size limit (minibatches can be large)
};

// An open StreamBatches call; the destructor cancels it if unfinished (the server then drops
// its prefetched batches). Not thread-safe.
class BatchStream {
 public:
  virtual ~BatchStream() = default;
  // The next batch, nullopt at the end of the stream, or the error the stream ended with
  // (named after the server), or DataLoss for a malformed batch.
  virtual absl::StatusOr<absl::optional<MinibatchData>> Next() = 0;
  // Thread-safe: makes a Next() blocked in another thread return (with an error) soon.
  virtual void Cancel() = 0;
};

class PartitionClient {
 public:
  // Creates the channel; connects lazily (no RPC here). InvalidArgument for an empty address.
  static absl::StatusOr<std::unique_ptr<PartitionClient>> Create(std::string address,
                                                                 const ClientOptions& options);
  ~PartitionClient();
  PartitionClient(const PartitionClient&) = delete;
  PartitionClient& operator=(const PartitionClient&) = delete;

  const std::string& address() const;

  // Polls grpc.health.v1.Health/Check ("" service) until SERVING. A server without the health
  // service (UNIMPLEMENTED) counts as up once it answers. DeadlineExceeded, with the last
  // reason seen, when `deadline` passes first.
  absl::Status WaitUntilServing(absl::Time deadline);

  absl::StatusOr<ServerMetadata> GetMetadata();
  // "train", "val" or "test": the global ids of that split (of the target type) owned here.
  absl::StatusOr<std::vector<int64_t>> GetSplit(absl::string_view split);
  // Opens an epoch stream. `metadata` (of this graph) validates the batches. The stream's
  // deadline is rpc_timeout_s per batch it carries.
  // Hooks for every ring segment this client's streams map (trainer/host_register.h); before
  // the first stream.
  void SetRingMapHooks(shm::ShmRingReader::MapHooks hooks);
  absl::StatusOr<std::unique_ptr<BatchStream>> StreamBatches(const StreamOptions& options,
                                                             const ServerMetadata& metadata);

 private:
  struct Impl;
  explicit PartitionClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_BATCH_CLIENT_H_
