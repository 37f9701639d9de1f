#ifndef GRAPHSHARD_CLIENT_BATCH_CLIENT_H_
#define GRAPHSHARD_CLIENT_BATCH_CLIENT_H_

// gRPC client of one partition server (PartitionService + grpc.health.v1), returning the plain
// structs of client/data_types.h: the rest of the trainer never sees protobuf or gRPC types.
// Every unary RPC carries a deadline (ClientOptions::rpc_timeout_s); a stream carries a
// per-message one instead (ClientOptions::stall_timeout_s: waiting longer than that for its next
// batch cancels it as stalled), and the channel pings the server (rpc::LivenessOptions), so a
// stopped server is noticed within stall_timeout_s whatever the stream's length.
// Responses are validated before they are returned, so a bad server answer is a DataLoss status
// naming the server, never a crash later. Every error names the part, the address and the
// server's host (Label()).
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
#include "client/data_types.h"
#include "rpc/options.h"
#include "shm/ring.h"

namespace graphshard::client {

struct StreamOptions {
  std::vector<int64_t> seeds;  // of seed_type, all owned by the server asked; link
                               // streams: positions in the server's edge split
  std::string seed_type;       // node streams: "" = the target type
  int64_t batch_size = 256;
  bool shuffle = true;
  uint64_t shuffle_seed = 0;
  int64_t epoch = 0;
  int64_t first_batch = 0;  // resume
  int64_t num_batches = 0;  // per epoch; 0 = ceil(seeds / batch_size); more wraps around
  // Epochs epoch .. epoch + num_epochs - 1 back to back in one stream (the first from
  // first_batch): the server builds the next epoch's first batches while this one ends.
  int64_t num_epochs = 1;
  std::vector<int32_t> fanouts;
  bool replace = false;
  TemporalSampling temporal = TemporalSampling::kOff;  // data_types.h
  bool temporal_last = false;                          // temporal_strategy "last" (else "uniform")
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
  std::string client_host_id;  // equal to the server's: shared memory
  // Shared memory: at most this many of the stream's batches are alive at once in the client
  // (the server's ring of segments; proto StreamBatchesRequest.shm_ring). 0: no ring.
  int max_held_batches = 8;
  // Link prediction (proto LinkSampling): set edge_type for a link stream.
  struct Link {
    std::string edge_type;
    std::string split = "train";
    int neg_ratio = 1;
    bool degree_negatives = false;  // else uniform
  } link{};
  // Nonzero: node rows from this layer table (full-graph inference), not the features; the
  // metadata given to StreamBatches then has the table's dims as feat_dim.
  uint64_t table = 0;
  // The batches without feature rows (the trainer's device feature store has them), labels of
  // the seeds only (proto SamplingConfig.without_features).
  bool without_features = false;
};

struct GatherRowsOptions {
  // The ids may be owned by any part (proto GatherFeaturesRequest.any_part): the server asks
  // their owners, its peers, through its hot-row cache.
  bool any_part = false;
  std::string client_host_id;  // equal to the server's (and proven): the rows come in shared memory
};

struct ClientOptions {
  double rpc_timeout_s = 60;
  // A stream waiting longer than this for its next batch is cancelled: DeadlineExceeded "stalled"
  // (the time the caller takes between batches does not count). Also sets the channel's
  // keepalive (rpc::LivenessOptions).
  double stall_timeout_s = 30;
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
  // `part`: the part this server is expected to serve (named in errors; -1 = unknown).
  static absl::StatusOr<std::unique_ptr<PartitionClient>> Create(std::string address,
                                                                 const ClientOptions& options,
                                                                 int part = -1);
  ~PartitionClient();
  PartitionClient(const PartitionClient&) = delete;
  PartitionClient& operator=(const PartitionClient&) = delete;

  const std::string& address() const;
  // "part P, server ADDRESS on host H" (the host once GetMetadata told it: its host id's
  // hostname), for error messages. Thread-safe.
  std::string Label() const;

  // One health check, failing fast when the server cannot be reached (connection refused):
  // OK when SERVING (or answering without a health service); else the reason, naming Label().
  absl::Status CheckServing(absl::Time deadline);

  absl::StatusOr<ServerMetadata> GetMetadata();
  // "train", "val" or "test": the global ids of that split (of the target type) owned here;
  // with `edge_type` (link prediction), the positions 0..n-1 of that edge type's n split edges
  // here (a link stream's seeds).
  absl::StatusOr<std::vector<int64_t>> GetSplit(absl::string_view split,
                                                absl::string_view edge_type = "");
  // The input graph's ids of every target-type node owned here, in global id order.
  absl::StatusOr<std::vector<int64_t>> GetOrigIds();
  // Full-graph inference: rows ([ids, dim] float32) of layer table `table` for target-type
  // nodes owned here; returns how many owned nodes still have no row in it.
  absl::StatusOr<int64_t> PutRows(uint64_t table, int64_t dim, absl::Span<const int64_t> ids,
                                  absl::Span<const float> rows);
  absl::Status DropTable(uint64_t table);
  // The feature rows ([ids, feat_dim] in `dtype`, row-major) of `ids` of `node_type`, owned
  // here unless `options.any_part` (the trainer's feature store loads every part's rows with
  // this, and its remote tier asks a same-host server for any part's rows). DataLoss when the
  // answer's size is not ids x feat_dim.
  absl::StatusOr<std::string> GatherRows(const std::string& node_type,
                                         absl::Span<const int64_t> ids, int64_t feat_dim,
                                         FeatureDtype dtype, const GatherRowsOptions& options = {});
  // Every in-edge of `ids` (destination ids of `edge_type`, owned here): SampleOneHop with
  // fanout -1, so each node's in-neighbours come in the order of the part's CSC. The trainer's
  // GPU sampler reads the graph's topology with this (client/graph_topology.h). DataLoss when
  // the answer is not one count per id adding up to its neighbours.
  struct InEdges {
    std::vector<int64_t> counts;     // [ids]
    std::vector<int64_t> neighbors;  // [sum(counts)], grouped by id in request order
  };
  absl::StatusOr<InEdges> AllInEdges(const std::string& edge_type, absl::Span<const int64_t> ids);
  // The labels of `ids` of `node_type` (owned here; -1 = unlabelled), through GatherFeatures
  // (whose answer carries them beside the rows, asked in float16, the smallest). DataLoss for
  // an answer without one label per id.
  absl::StatusOr<std::vector<int64_t>> GatherLabels(const std::string& node_type,
                                                    absl::Span<const int64_t> ids);
  // Opens an epoch stream. `metadata` (of this graph) validates the batches. Each batch must
  // arrive within stall_timeout_s of asking for it.
  // Hooks for every ring segment this client's streams map (trainer/host_register.h); before
  // the first stream.
  void SetRingMapHooks(shm::ShmRingReader::MapHooks hooks);
  absl::StatusOr<std::unique_ptr<BatchStream>> StreamBatches(const StreamOptions& options,
                                                             const ServerMetadata& metadata);

 private:
  struct Impl;
  explicit PartitionClient(std::unique_ptr<Impl> impl);
  // What this server's host proof file holds, read once per name ("" when unreadable: another
  // host or user), learning the name from GetMetadata first if needed.
  std::string HostProof();
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_BATCH_CLIENT_H_
