#ifndef GRAPHSHARD_SERVER_BULK_PEERS_H_
#define GRAPHSHARD_SERVER_BULK_PEERS_H_

// engine::Peers over the bulk transport (docs/TRANSPORT.md): SampleOneHop and GatherFeatures
// travel as raw arrays (server/bulk_codec.h) on a transport::Client; gRPC (GrpcPeers) keeps
// control: it finds the peer, asks its GetMetadata for the bulk port (once per peer; again after
// a connection failure, so a restarted peer is found), and answers MappedPart/SamplingPart.
// A peer that publishes no bulk port (an older server, or --bulk-port -1) is asked over gRPC;
// so are the GatherFeatures of a peer on this host when shared memory is on (GrpcPeers'
// host_id): its rows then come through a shared-memory segment, no socket at all.
// Answers are identical to GrpcPeers'. Thread-safe.
//
// BulkHandlers: the server side, the same two calls answered from the local part.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/grpc_peers.h"
#include "server/server_stats.h"
#include "transport/transport.h"

namespace graphshard::server {

// How a server sends SampleOneHop and GatherFeatures to peers it asks over the network.
enum class PeerTransport {
  kGrpc,  // protobuf messages on the gRPC channel
  kBulk,  // raw arrays on the bulk transport (BulkPeers); gRPC for peers without a bulk port
};

class BulkPeers final : public engine::Peers {
 public:
  // `grpc`, `client` and `stats` (may be null) must outlive this; every request has deadline
  // now + `timeout`. Each call's frames are counted in stats' peer traffic (Stats.peer_*).
  BulkPeers(GrpcPeers& grpc, transport::Client& client, absl::Duration timeout,
            ServerStats* stats = nullptr)
      : grpc_(grpc), client_(client), timeout_(timeout), stats_(stats) {}

  void SampleOneHop(int part, engine::OneHopRequest request,
                    Callback<std::vector<engine::HopResult>> done) override;
  void GatherFeatures(int part, std::vector<engine::TypedIds> items, engine::FeatureDtype dtype,
                      Callback<std::vector<engine::FeatureBlock>> done) override;
  // Layer tables (full-graph inference) go over gRPC.
  void GatherTable(int part, uint64_t table, std::vector<engine::TypedIds> items,
                   engine::FeatureDtype dtype,
                   Callback<std::vector<engine::FeatureBlock>> done) override {
    grpc_.GatherTable(part, table, std::move(items), dtype, std::move(done));
  }
  const engine::LocalPart* MappedPart(int part) override { return grpc_.MappedPart(part); }
  const engine::LocalPart* SamplingPart(int part) override { return grpc_.SamplingPart(part); }

 private:
  struct Route {
    transport::Endpoint endpoint;  // an empty address: ask over gRPC
    bool gather_over_grpc = false;  // same host, shared memory on: rows through shm
  };
  // How part `part` is asked. Unavailable if its metadata cannot be had now (asked again next
  // time).
  absl::StatusOr<Route> RouteFor(int part);
  // Forgets the endpoint after a transient failure (common/transient_error.h: the peer may have
  // moved).
  void Forget(int part, const absl::Status& why);

  GrpcPeers& grpc_;
  transport::Client& client_;
  const absl::Duration timeout_;
  ServerStats* const stats_;
  absl::Mutex mu_;
  std::map<int, Route> routes_ ABSL_GUARDED_BY(mu_);
};

// Handlers of kBulkSampleOneHop and kBulkGatherFeatures answering from `local`, counted in
// `stats` as methods "bulk/SampleOneHop" and "bulk/GatherFeatures". Both must outlive the
// server using them.
std::map<uint16_t, transport::Handler> BulkHandlers(const engine::LocalPart& local,
                                                    ServerStats& stats);

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_BULK_PEERS_H_
