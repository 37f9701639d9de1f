#ifndef GRAPHSHARD_SERVER_GRPC_PEERS_H_
#define GRAPHSHARD_SERVER_GRPC_PEERS_H_

// engine::Peers over gRPC: one channel per peer part, found in an explicit address list or in
// the registry directory (looked up lazily, so peers may start in any order). Every call has a
// deadline; errors name the part and address. Thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/graphshard.grpc.pb.h"
#include "server/engine/peers.h"

namespace graphshard::server {

struct PeerOptions {
  std::vector<std::string> addresses;  // index = part; if empty, use registry_dir
  std::string registry_dir;
  absl::Duration rpc_timeout = absl::Seconds(30);
  // Sent with feature gathers: a peer with the same host id answers through shared memory.
  std::string host_id;
};

class GrpcPeers final : public engine::Peers {
 public:
  explicit GrpcPeers(PeerOptions options) : options_(std::move(options)) {}

  void SampleOneHop(int part, engine::OneHopRequest request,
                    Callback<std::vector<engine::HopResult>> done) override;
  void GatherFeatures(int part, std::vector<engine::TypedIds> items, engine::FeatureDtype dtype,
                      Callback<std::vector<engine::FeatureBlock>> done) override;

 private:
  struct Peer {
    std::string address;
    std::unique_ptr<v1::PartitionService::Stub> stub;
  };
  // Unavailable naming the part if it cannot be resolved.
  absl::StatusOr<Peer*> PeerFor(int part);

  const PeerOptions options_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Peer>> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_GRPC_PEERS_H_
