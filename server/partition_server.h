#ifndef GRAPHSHARD_SERVER_PARTITION_SERVER_H_
#define GRAPHSHARD_SERVER_PARTITION_SERVER_H_

// A running partition server: loads one part, serves PartitionService and the standard gRPC
// health service, and publishes its bound address in the registry. Used by graphshard-server
// and by tests (real servers on port 0, in-process).

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rpc/options.h"
#include "server/bulk_peers.h"
#include "server/engine/cached_peers.h"
#include "server/engine/local_part.h"
#include "server/engine/split_gathers.h"
#include "server/grpc_peers.h"
#include "server/metrics_http.h"
#include "server/partition_service.h"
#include "server/server_stats.h"
#include "transport/asio_transport.h"

namespace graphshard::server {

struct ServerOptions {
  std::string partition_dir;
  int part = 0;
  std::string listen = "127.0.0.1:0";  // port 0 = any free port
  std::string registry_dir;            // publish here if set; peers are looked up here too
  std::vector<std::string> peer_addresses;  // explicit peers (index = part), overrides registry
  absl::Duration rpc_timeout = absl::Seconds(30);
  // Keepalive of every connection (peers' and clients'): a stopped peer or client is noticed
  // within this (rpc::LivenessOptions); also bounds each peer call (with rpc_timeout).
  absl::Duration stall_timeout = absl::Seconds(30);
  // Which replica of the part this server is (registry entry part_<k> or part_<k>.r<r>).
  int replica = 0;
  engine::Limits limits;
  int threads = 0;  // batch builders (0 = hardware threads)
  // kLocal: feature rows of same-host peers are read from their parts in partition_dir (mmap)
  // instead of GatherFeatures calls; peers on other hosts are always asked (docs/SERVER.md).
  PeerFeatures peer_features = PeerFeatures::kLocal;
  // kLocal: same-host peers' parts are sampled in-process from the same mapping (no
  // SampleOneHop); kRpc: always ask them.
  PeerSampling peer_sampling = PeerSampling::kLocal;
  // Peers treated as on another host (--isolated-peers): sampled and gathered by RPC only, never
  // mapped from partition_dir, no shared-memory answers; overrides peer_features/peer_sampling.
  bool isolated_peers = false;
  // The cache of hot remote feature rows (0 = none) and the dtype float32 rows cross to this
  // server in (engine::CachedPeers, docs/SERVER.md).
  int64_t peer_cache_bytes = 0;
  engine::FeatureDtype peer_dtype = engine::FeatureDtype::kFloat32;
  // A GatherFeatures of more bytes than this asks the peer in pieces of at most this many,
  // all in flight at once (engine::SplitGathers); 0 = every request whole.
  int64_t peer_piece_bytes = engine::kDefaultGatherPieceBytes;
  // The bulk transport (docs/TRANSPORT.md): this server's listener on the host of `listen`
  // (bulk_port 0 = any free port, -1 = none), published in Metadata.bulk_port; and how this
  // server asks its peers (kBulk: through their bulk ports).
  int bulk_port = 0;
  PeerTransport peer_transport = PeerTransport::kBulk;
  transport::AsioOptions bulk;
  // The Prometheus endpoint (server/metrics_http.h): "host:port" (port 0 = any free port,
  // published in Metadata.metrics_port); "" = none.
  std::string metrics_listen;
  // Progress of loading and checking the part (common/progress.h; log nullptr = none).
  common::ProgressOptions load_progress = {};
  ServiceOptions service;
  // The job token and TLS of every gRPC port and channel (rpc/security.h, docs/SECURITY.md);
  // keepalive is set from stall_timeout. The bulk transport asks peers for the same token and
  // is not started under TLS (it has none): peers are then asked over gRPC.
  rpc::RpcOptions rpc;
};

class PartitionServer {
 public:
  // Loads and validates the part (errors name the file), binds, starts serving and publishes
  // the address. Unavailable if the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<PartitionServer>> Start(const ServerOptions& options);
  ~PartitionServer();

  // "host:port" actually bound (a wildcard host is published as this machine's hostname).
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // The bulk transport's port (0 if none).
  int bulk_port() const { return bulk_server_ != nullptr ? bulk_server_->port() : 0; }
  // The Prometheus endpoint's port (0 if none).
  int metrics_port() const { return metrics_port_; }
  // Stops accepting, lets in-flight calls finish (up to `grace`), unpublishes. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(10));

 private:
  PartitionServer() = default;
  // The steps of Start, in order, once the part is loaded.
  // The service's options from options_: host id, stream idle time, a fresh shared-memory
  // prefix (this prefix's and dead servers' segments removed), and the host proof (none, with
  // a warning, if it cannot be made).
  ServiceOptions PrepareServiceOptions();
  // peers_: the gRPC peers (and their liveness probe when there are other parts).
  void ConnectPeers(const ServiceOptions& service, const rpc::RpcOptions& rpc_options);
  // engine_peers_: what the engine asks: the bulk transport's peers or peers_, behind the cache
  // of remote rows when there is one.
  void ChooseEnginePeers(int threads);
  // The bulk transport's listener (unless bulk_port < 0), its port published in `service`.
  absl::Status StartBulkServer(int threads, ServiceOptions& service);
  // The Prometheus endpoint (if metrics_listen is set), its port published in `service`.
  absl::Status StartMetrics(ServiceOptions& service);
  // Serves service_ over gRPC (Unavailable if options_.listen cannot be bound); sets address_.
  absl::Status StartGrpc(const rpc::RpcOptions& rpc_options);
  // Publishes address_ in the registry folder (if any); shuts down if that fails.
  absl::Status Publish();

  ServerOptions options_;
  // Declaration order = reverse destruction order: the executor joins its jobs (which use
  // local_ and peers_) before those go away.
  std::unique_ptr<engine::LocalPart> local_;
  ServerStats stats_;
  std::unique_ptr<GrpcPeers> peers_;
  // With PeerTransport::kBulk (the client is destroyed before bulk_peers_: requests it fails at
  // the end call back into it).
  std::unique_ptr<BulkPeers> bulk_peers_;
  std::unique_ptr<transport::AsioClient> bulk_client_;
  // Over the network peers (bulk_peers_ or peers_) when there is a cache or a 16-bit peer dtype
  // (destroyed first: it stops its fill thread, which calls them); what the engine asks.
  std::unique_ptr<engine::CachedPeers> cached_peers_;
  // Over the above when peer_piece_bytes > 0 (destroyed before them).
  std::unique_ptr<engine::SplitGathers> split_gathers_;
  engine::Peers* engine_peers_ = nullptr;
  std::unique_ptr<transport::AsioServer> bulk_server_;  // answers from local_, counts in stats_
  std::unique_ptr<shm::HostProof> host_proof_;  // null: no shared memory to clients
  std::unique_ptr<common::Executor> executor_;
  std::unique_ptr<PartitionServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::string shm_prefix_;
  int port_ = 0;
  int metrics_port_ = 0;
  bool stopped_ = false;
  // Renders stats_ on its own thread: declared last, destroyed first.
  std::unique_ptr<MetricsHttpServer> metrics_http_;
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_PARTITION_SERVER_H_
