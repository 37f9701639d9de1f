#ifndef GRAPHSHARD_TRAINER_BATCH_CLIENT_H_
#define GRAPHSHARD_TRAINER_BATCH_CLIENT_H_

// gRPC client of one partition server (PartitionService + grpc.health.v1), returning plain
// structs: the rest of the trainer never sees protobuf or gRPC types. Every RPC carries a
// deadline (ClientOptions::rpc_timeout_s); responses are validated before they are returned,
// so a bad server answer is a DataLoss status naming the server, never a crash later.
// Thread-safe: several RPCs may be in flight on one client (gRPC stubs are thread-safe).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace graphshard::trainer {

struct ServerMetadata {
  int part = 0;
  int num_parts = 0;
  int64_t num_nodes = 0;
  std::vector<int64_t> part_offsets;  // [num_parts + 1]
  int64_t feat_dim = 0;
  int64_t num_classes = 0;
};

// One sampled subgraph, decoded. node_ids[0, batch_size) are the seeds; edge e goes from
// node edge_src[e] into node edge_dst[e] (indices into node_ids).
struct MinibatchData {
  int64_t batch_size = 0;
  std::vector<int64_t> node_ids;
  int64_t feat_dim = 0;
  std::vector<float> features;  // [num_nodes, feat_dim] row-major
  std::vector<int64_t> labels;  // [num_nodes]
  std::vector<int64_t> edge_src;
  std::vector<int64_t> edge_dst;
  int64_t num_nodes() const { return static_cast<int64_t>(node_ids.size()); }
};

struct SampleRequest {
  absl::Span<const int64_t> seeds;  // owned by the server asked
  absl::Span<const int32_t> fanouts;
  bool replace = false;
  uint64_t seed = 0;
};

struct ClientOptions {
  double rpc_timeout_s = 60;
  int max_receive_bytes = 1 << 30;  // minibatches can be large
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
  // "train", "val" or "test": the global ids of that split owned by this server.
  absl::StatusOr<std::vector<int64_t>> GetSplit(absl::string_view split);
  absl::StatusOr<MinibatchData> SampleMinibatch(const SampleRequest& request);

 private:
  struct Impl;
  explicit PartitionClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_BATCH_CLIENT_H_
