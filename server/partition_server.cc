#include "server/partition_server.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>

#include "absl/strings/str_cat.h"
#include "common/registry.h"
#include "common/status_macros.h"
#include "rpc/channel.h"
#include "server/asio_executor.h"
#include "server/metrics_text.h"
#include "shm/ring.h"

namespace graphshard::server {
namespace {

// The host part of `listen` to bind the bulk transport on: "" (every IPv4 interface) for an
// empty or 0.0.0.0 host, brackets removed from an IPv6 one.
std::string BulkBindHost(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host == "0.0.0.0" ? std::string() : host;
}

std::string PublishedHost(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::") {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) == 0) return name;
    return "127.0.0.1";
  }
  return host;
}

// The bulk transport's sockets run on a quarter of the server's threads (2 to 8): two I/O
// threads move a few GB/s, and a server of many builders asks and answers more at once.
transport::AsioOptions BulkOptions(transport::AsioOptions bulk, int threads) {
  bulk.io_threads = std::max(bulk.io_threads, std::min(8, threads / 4));
  return bulk;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PartitionServer>> PartitionServer::Start(
    const ServerOptions& options) {
  auto s = std::unique_ptr<PartitionServer>(new PartitionServer());
  s->options_ = options;
  ASSIGN_OR_RETURN(std::unique_ptr<common::PartitionPart> part,
                   common::PartitionPart::Load(options.partition_dir, options.part,
                                               {.progress = options.load_progress}));
  ASSIGN_OR_RETURN(s->local_, engine::LocalPart::Create(std::move(part), options.limits));
  ServiceOptions service = options.service;
  if (service.host_id.empty()) service.host_id = shm::HostId();
  if (service.stream_idle <= absl::ZeroDuration()) service.stream_idle = options.stall_timeout;
  service.shm_prefix = shm::NewShmPrefix();
  service.token = options.rpc.token;
  s->shm_prefix_ = service.shm_prefix;
  shm::RemoveOwnAndStaleShm(s->shm_prefix_);
  if (service.shared_memory) {
    absl::StatusOr<std::unique_ptr<shm::HostProof>> proof = shm::HostProof::Create(s->shm_prefix_);
    if (proof.ok()) {
      s->host_proof_ = *std::move(proof);
      service.host_proof = s->host_proof_.get();
    } else {
      std::fprintf(stderr, "graphshard-server: %s; no shared memory for clients\n",
                   std::string(proof.status().message()).c_str());
    }
  }
  PeerOptions peers;
  peers.addresses = options.peer_addresses;
  peers.registry_dir = options.registry_dir;
  // A peer call is one hop or one gather: no answer within the stall timeout means the peer is
  // stalled as surely as a silent stream does.
  peers.rpc_timeout = std::min(options.rpc_timeout, options.stall_timeout);
  const rpc::RpcOptions rpc_options =
      rpc::LivenessOptions(absl::ToDoubleSeconds(options.stall_timeout), options.rpc);
  peers.rpc = rpc_options;
  peers.self_replica = options.replica;
  // Isolated: peers are treated as on another host (no answer through shared memory, no part
  // mapped from partition_dir), so every remote hop and row takes the network path.
  peers.host_id =
      service.shared_memory && !options.isolated_peers ? service.host_id : std::string();
  peers.peer_features = options.isolated_peers ? PeerFeatures::kRpc : options.peer_features;
  peers.peer_sampling = options.isolated_peers ? PeerSampling::kRpc : options.peer_sampling;
  peers.traffic = s->stats_.peer_traffic();
  peers.this_host_id = service.host_id;
  peers.partition_dir = options.partition_dir;
  peers.self_part = options.part;
  peers.limits = options.limits;
  s->peers_ = std::make_unique<GrpcPeers>(std::move(peers));
  // A stopped peer is noticed (and logged) within the stall timeout, calls in flight or not.
  if (s->local_->num_parts() > 1) s->peers_->StartLivenessProbe(options.stall_timeout / 2);
  const int threads = options.threads > 0 ? options.threads
                                          : static_cast<int>(std::thread::hardware_concurrency());
  engine::Peers* network_peers = s->peers_.get();
  transport::AsioOptions bulk_base = options.bulk;
  bulk_base.token = options.rpc.token;  // both directions: hello sent, hello required
  if (options.peer_transport == PeerTransport::kBulk) {
    s->bulk_client_ = std::make_unique<transport::AsioClient>(BulkOptions(bulk_base, threads));
    s->bulk_peers_ = std::make_unique<BulkPeers>(*s->peers_, *s->bulk_client_,
                                                 options.rpc_timeout, &s->stats_);
    network_peers = s->bulk_peers_.get();
  }
  s->engine_peers_ = network_peers;
  if (options.peer_cache_bytes > 0 || options.peer_dtype != engine::FeatureDtype::kFloat32) {
    s->cached_peers_ = std::make_unique<engine::CachedPeers>(
        *s->local_, *network_peers,
        engine::CachedPeersOptions{.capacity_bytes = options.peer_cache_bytes,
                                   .wire_dtype = options.peer_dtype,
                                   .fill_timeout = options.rpc_timeout + absl::Seconds(5)});
    s->engine_peers_ = s->cached_peers_.get();
    s->stats_.SetPeerCache(s->cached_peers_.get());
  }
  if (options.bulk_port >= 0) {
    // The peers' requests are served by as many threads as build batches here, as gRPC's
    // thread pool serves them on the gRPC path (it was a fixed 4; docs/TRANSPORT.md).
    transport::AsioOptions bulk = BulkOptions(bulk_base, threads);
    bulk.handler_threads = std::max(bulk.handler_threads, threads);
    ASSIGN_OR_RETURN(s->bulk_server_,
                     transport::AsioServer::Start(BulkBindHost(options.listen), options.bulk_port,
                                                  BulkHandlers(*s->local_, s->stats_), bulk));
    service.bulk_port = s->bulk_server_->port();
  }
  if (!options.metrics_listen.empty()) {
    PartitionServer* raw = s.get();
    ASSIGN_OR_RETURN(s->metrics_http_,
                     MetricsHttpServer::Start(options.metrics_listen, [raw] {
                       v1::Stats stats;
                       raw->stats_.Fill(&stats);
                       return PrometheusText(stats, {.part = raw->options_.part,
                                                     .replica = raw->options_.replica});
                     }, MetricsHttpOptions{.token = options.rpc.token}));
    s->metrics_port_ = s->metrics_http_->port();
    service.metrics_port = s->metrics_port_;
  }
  s->executor_ = std::make_unique<AsioExecutor>(threads, "gs-build");
  s->service_ = std::make_unique<PartitionServiceImpl>(*s->local_, *s->engine_peers_, *s->executor_,
                                                       s->stats_, service);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  rpc::ConfigureServerBuilder(builder, options.listen, rpc_options, &s->port_);
  builder.RegisterService(s->service_.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }
  s->server_->GetHealthCheckService()->SetServingStatus(true);
  s->address_ = absl::StrCat(PublishedHost(options.listen), ":", s->port_);
  if (!options.registry_dir.empty()) {
    absl::Status published = common::PublishAddress(options.registry_dir, options.part, s->address_, options.replica);
    if (published.ok() && !options.rpc.token.empty()) {
      published = common::CheckRegistryFolder(options.registry_dir);  // peers are read there
    }
    if (!published.ok()) {
      s->Shutdown(absl::ZeroDuration());
      return published;
    }
  }
  return s;
}

void PartitionServer::Shutdown(absl::Duration grace) {
  if (stopped_) return;
  stopped_ = true;
  if (!options_.registry_dir.empty()) {
    common::RemoveAddress(options_.registry_dir, options_.part, options_.replica);
  }
  server_->GetHealthCheckService()->SetServingStatus(false);
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
  if (bulk_server_ != nullptr) bulk_server_->Shutdown();
  if (bulk_client_ != nullptr) {
    // What went through the bulk transport (tests/deploy/netns_multihost_test.sh reads this).
    transport::TransportStats sent = bulk_client_->stats();
    std::fprintf(stderr,
                 "graphshard-server: part %d sent %lld bulk requests to peers (%lld errors), "
                 "%.1f MiB out, %.1f MiB in\n",
                 options_.part, static_cast<long long>(sent.requests),
                 static_cast<long long>(sent.errors), sent.bytes_sent / 1048576.0,
                 sent.bytes_received / 1048576.0);
  }
  shm::RemoveOwnAndStaleShm(shm_prefix_);
}

PartitionServer::~PartitionServer() {
  if (server_ != nullptr) Shutdown(absl::ZeroDuration());
}

}  // namespace graphshard::server
