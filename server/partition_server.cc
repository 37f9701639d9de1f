#include "server/partition_server.h"

#include <sys/resource.h>
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

// The soft limit on open descriptors, raised to the hard limit first (once per process): a
// server holds a descriptor per connection, mapped file and segment.
int64_t OpenFileLimit() {
  static const int64_t limit = [] {
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return int64_t{0};
    if (r.rlim_cur < r.rlim_max) {
      rlimit raised = r;
      raised.rlim_cur = r.rlim_max;
      if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
    }
    return r.rlim_cur == RLIM_INFINITY ? int64_t{1} << 20 : static_cast<int64_t>(r.rlim_cur);
  }();
  return limit;
}

// The bulk transport's options: the server's, with the job token (both directions: hello sent,
// hello required), its sockets on a quarter of the server's threads (2 to 8): two I/O threads
// move a few GB/s, and a server of many builders asks and answers more at once.
transport::AsioOptions BulkOptions(const ServerOptions& options, int threads) {
  transport::AsioOptions bulk = options.bulk;
  bulk.token = options.rpc.token;
  bulk.io_threads = std::max(bulk.io_threads, std::min(8, threads / 4));
  // The bulk port may hold at most a quarter of the descriptors this process may open: the
  // rest stay for gRPC, the mapped part and the shared-memory segments, so that no client
  // opening bulk connections can leave the published gRPC port unable to accept.
  const int64_t quarter = OpenFileLimit() / 4;
  if (quarter > 0) {
    bulk.max_connections = static_cast<int>(std::min<int64_t>(bulk.max_connections, quarter));
    bulk.max_connections_per_address =
        std::min(bulk.max_connections_per_address, bulk.max_connections);
  }
  return bulk;
}

// The deadline of every call to a peer, over gRPC or the bulk transport: a peer call is one hop
// or one gather, so no answer within the stall timeout means the peer is stalled as surely as a
// silent stream does (a hung peer is given up on then, not after the longer --rpc-timeout-s).
absl::Duration PeerCallTimeout(const ServerOptions& options) {
  return std::min(options.rpc_timeout, options.stall_timeout);
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
  ServiceOptions service = s->PrepareServiceOptions();
  const rpc::RpcOptions rpc_options =
      rpc::LivenessOptions(absl::ToDoubleSeconds(options.stall_timeout), options.rpc);
  s->ConnectPeers(service, rpc_options);
  const int threads = options.threads > 0 ? options.threads
                                          : static_cast<int>(std::thread::hardware_concurrency());
  s->ChooseEnginePeers(threads);
  RETURN_IF_ERROR(s->StartBulkServer(threads, service));
  RETURN_IF_ERROR(s->StartMetrics(service));
  s->executor_ = std::make_unique<AsioExecutor>(threads, "gs-build");
  s->service_ = std::make_unique<PartitionServiceImpl>(*s->local_, *s->engine_peers_, *s->executor_,
                                                       s->stats_, service);
  RETURN_IF_ERROR(s->StartGrpc(rpc_options));
  RETURN_IF_ERROR(s->Publish());
  return s;
}

ServiceOptions PartitionServer::PrepareServiceOptions() {
  ServiceOptions service = options_.service;
  if (service.host_id.empty()) service.host_id = shm::HostId();
  if (service.stream_idle <= absl::ZeroDuration()) service.stream_idle = options_.stall_timeout;
  service.shm_prefix = shm::NewShmPrefix();
  // An answer sent inline must fit gRPC's message limit, with room for the message's framing.
  service.max_answer_bytes =
      std::max<int64_t>(options_.rpc.max_message_bytes - (int64_t{1} << 20), int64_t{1} << 20);
  service.token = options_.rpc.token;
  shm_prefix_ = service.shm_prefix;
  shm::RemoveOwnAndStaleShm(shm_prefix_);
  if (service.shared_memory) {
    absl::StatusOr<std::unique_ptr<shm::HostProof>> proof = shm::HostProof::Create(shm_prefix_);
    if (proof.ok()) {
      host_proof_ = *std::move(proof);
      service.host_proof = host_proof_.get();
    } else {
      std::fprintf(stderr, "graphshard-server: %s; no shared memory for clients\n",
                   std::string(proof.status().message()).c_str());
    }
  }
  return service;
}

void PartitionServer::ConnectPeers(const ServiceOptions& service,
                                   const rpc::RpcOptions& rpc_options) {
  PeerOptions peers;
  peers.addresses = options_.peer_addresses;
  peers.registry_dir = options_.registry_dir;
  peers.rpc_timeout = PeerCallTimeout(options_);
  peers.rpc = rpc_options;
  peers.self_replica = options_.replica;
  // Isolated: peers are treated as on another host (no answer through shared memory, no part
  // mapped from partition_dir), so every remote hop and row takes the network path.
  peers.host_id =
      service.shared_memory && !options_.isolated_peers ? service.host_id : std::string();
  peers.peer_features = options_.isolated_peers ? PeerFeatures::kRpc : options_.peer_features;
  peers.peer_sampling = options_.isolated_peers ? PeerSampling::kRpc : options_.peer_sampling;
  peers.traffic = stats_.peer_traffic();
  peers.this_host_id = service.host_id;
  peers.partition_dir = options_.partition_dir;
  peers.self_part = options_.part;
  peers.limits = options_.limits;
  peers_ = std::make_unique<GrpcPeers>(std::move(peers));
  // A stopped peer is noticed (and logged) within the stall timeout, calls in flight or not.
  if (local_->num_parts() > 1) peers_->StartLivenessProbe(options_.stall_timeout / 2);
}

void PartitionServer::ChooseEnginePeers(int threads) {
  engine::Peers* network_peers = peers_.get();
  if (options_.peer_transport == PeerTransport::kBulk) {
    bulk_client_ = std::make_unique<transport::AsioClient>(BulkOptions(options_, threads));
    bulk_peers_ =
        std::make_unique<BulkPeers>(*peers_, *bulk_client_, PeerCallTimeout(options_), &stats_);
    network_peers = bulk_peers_.get();
  }
  engine_peers_ = network_peers;
  if (options_.peer_cache_bytes > 0 || options_.peer_dtype != engine::FeatureDtype::kFloat32) {
    cached_peers_ = std::make_unique<engine::CachedPeers>(
        *local_, *network_peers,
        engine::CachedPeersOptions{.capacity_bytes = options_.peer_cache_bytes,
                                   .wire_dtype = options_.peer_dtype,
                                   .fill_timeout = options_.rpc_timeout + absl::Seconds(5)});
    engine_peers_ = cached_peers_.get();
    stats_.SetPeerCache(cached_peers_.get());
  }
  if (options_.peer_piece_bytes > 0 && local_->num_parts() > 1) {
    split_gathers_ = std::make_unique<engine::SplitGathers>(
        *engine_peers_, engine::SplitGathers::FeatDimsOf(*local_), options_.peer_piece_bytes);
    engine_peers_ = split_gathers_.get();
  }
}

absl::Status PartitionServer::StartBulkServer(int threads, ServiceOptions& service) {
  if (options_.bulk_port < 0) return absl::OkStatus();
  // The peers' requests are served by as many threads as build batches here, as gRPC's
  // thread pool serves them on the gRPC path (it was a fixed 4; docs/TRANSPORT.md).
  transport::AsioOptions bulk = BulkOptions(options_, threads);
  bulk.handler_threads = std::max(bulk.handler_threads, threads);
  ASSIGN_OR_RETURN(bulk_server_,
                   transport::AsioServer::Start(BulkBindHost(options_.listen), options_.bulk_port,
                                                BulkHandlers(*local_, stats_), bulk));
  service.bulk_port = bulk_server_->port();
  return absl::OkStatus();
}

absl::Status PartitionServer::StartMetrics(ServiceOptions& service) {
  if (options_.metrics_listen.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(metrics_http_,
                   MetricsHttpServer::Start(options_.metrics_listen, [this] {
                     v1::Stats stats;
                     stats_.Fill(&stats);
                     return PrometheusText(stats, {.part = options_.part,
                                                   .replica = options_.replica});
                   }, MetricsHttpOptions{.token = options_.rpc.token}));
  metrics_port_ = metrics_http_->port();
  service.metrics_port = metrics_port_;
  return absl::OkStatus();
}

absl::Status PartitionServer::StartGrpc(const rpc::RpcOptions& rpc_options) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  rpc::ConfigureServerBuilder(builder, options_.listen, rpc_options, &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen));
  }
  server_->GetHealthCheckService()->SetServingStatus(true);
  address_ = absl::StrCat(PublishedHost(options_.listen), ":", port_);
  return absl::OkStatus();
}

absl::Status PartitionServer::Publish() {
  if (options_.registry_dir.empty()) return absl::OkStatus();
  absl::Status published =
      common::PublishAddress(options_.registry_dir, options_.part, address_, options_.replica);
  if (published.ok() && !options_.rpc.token.empty()) {
    published = common::CheckRegistryFolder(options_.registry_dir);  // peers are read there
  }
  if (!published.ok()) Shutdown(absl::ZeroDuration());
  return published;
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
