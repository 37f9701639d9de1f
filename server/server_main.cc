// graphshard-server: serves one part of a partition folder over gRPC until SIGTERM/SIGINT.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/feature_dtype.h"
#include "common/flags.h"
#include "common/progress.h"
#include "common/registry.h"
#include "common/status_macros.h"
#include "rpc/security.h"
#include "server/malloc_tuning.h"
#include "server/partition_server.h"

namespace {

// --prefetch 0: batches a stream keeps in flight. A batch's build mostly waits (peer answers,
// page faults, the ring), so one thread serves several builds: on 1 x H100 (16 cores, 7 threads
// per server, tests/bench/RESULTS.md) one trainer's epoch took 1.43 s at 8, 1.27 s at 16 and
// 1.09 s at 32. Capped because each batch in flight holds its memory (~120 MB on products).
int AutoPrefetch(int threads) {
  const int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(4 * n, 4, 32);
}

// --memory-budget-mib 0: three quarters of physical memory (the rest: the mapped part, gRPC,
// the peer cache, the kernel).
int64_t MemoryBudgetMib() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return int64_t{1} << 20;
  return (static_cast<int64_t>(pages) * page >> 20) * 3 / 4;
}

// A bad flag value or a failed start: main prints the message and exits with status 1.
absl::Status Fail(const std::string& message) { return absl::InvalidArgumentError(message); }

int ExitWith(const absl::Status& status) {
  std::fprintf(stderr, "graphshard-server: %s\n", std::string(status.message()).c_str());
  return 1;
}

// Every flag of graphshard-server, as plain values (defaults here).
struct Flags {
  std::string partition;
  int part = -1;
  std::string listen = "127.0.0.1:0";
  std::string registry;
  std::string servers;
  double rpc_timeout_s = 30;
  double stall_timeout_s = 30;
  int replica = 0;
  double shutdown_grace_s = 10;
  int threads = 0;
  int prefetch = 0;  // 0 = auto (AutoPrefetch)
  int max_streams = 64;
  int max_client_streams = 32;
  int64_t memory_budget_mib = 0;  // 0 = auto (MemoryBudgetMib)
  double memory_wait_s = 10;
  int64_t client_memory_mib = 0;  // 0 = auto: half the memory budget
  int64_t max_request_nodes = graphshard::engine::Limits{}.max_request_nodes;
  int64_t max_request_edges = graphshard::engine::Limits{}.max_request_edges;
  int64_t max_request_mib = graphshard::engine::Limits{}.max_request_bytes >> 20;
  bool shm = true;
  int64_t malloc_reuse_mib = 256;  // server/malloc_tuning.h
  std::string peer_features = "local";
  std::string peer_sampling = "local";
  bool isolated_peers = false;
  int peer_cache_mib = 256;
  int peer_piece_mib = 4;
  std::string peer_dtype = "float32";
  int bulk_port = 0;
  std::string peer_transport = "bulk";
  int bulk_max_frame_mib = 1024;
  int bulk_connections = 2;
  std::string metrics_listen;
  double progress_every_s = 10;
  graphshard::rpc::SecurityFlags security;
};

void RegisterFlags(graphshard::common::FlagSet& flags, Flags& f) {
  flags.AddString("partition", &f.partition, "DIR",
                  "partition folder (written by graphshard-partition)");
  flags.AddInt("part", &f.part, "K", "which part to serve");
  flags.AddString("listen", &f.listen, "HOST:PORT", "HOST:PORT to bind; port 0 = any free port");
  flags.AddString("registry", &f.registry, "DIR",
                  "registry folder: publish our address, find peers");
  flags.AddString("servers", &f.servers, "HOST:PORT,...",
                  "explicit peer addresses host:port,... (index = part)");
  flags.AddDouble("rpc-timeout-s", &f.rpc_timeout_s, "S",
                  "deadline of every call to a peer, seconds");
  flags.AddDouble("stall-timeout-s", &f.stall_timeout_s, "S",
                  "liveness: a stopped peer or client is noticed within S (keepalive\n"
                  "pings), and a peer call gets at most S (with --rpc-timeout-s)");
  flags.AddInt("replica", &f.replica, "R",
               "this server is replica R of its part (registry entry part_K.rR; 0 = part_K)");
  flags.AddDouble("shutdown-grace-s", &f.shutdown_grace_s, "S",
                  "how long in-flight calls may finish at shutdown");
  flags.AddInt("threads", &f.threads, "N",
               "threads building minibatches (0 = all hardware threads)");
  flags.AddInt("prefetch", &f.prefetch, "N",
               "minibatches prepared ahead per stream (0 = auto: 4 x the building threads,\n"
               "between 4 and 32; each is one batch in memory, docs/SERVER.md)");
  flags.AddInt("max-streams", &f.max_streams, "N",
               "concurrent batch streams; more get RESOURCE_EXHAUSTED");
  flags.AddInt("max-client-streams", &f.max_client_streams, "N",
               "concurrent batch streams of one client (connection); a stream that waited\n"
               "for its client --stall-timeout-s is reclaimed when a new one needs its slot");
  flags.AddInt64("memory-budget-mib", &f.memory_budget_mib, "MIB",
                 "memory all requests together may reserve (their cost bounds); past it\n"
                 "a request queues (--memory-wait-s), then RESOURCE_EXHAUSTED\n"
                 "(0 = auto: 3/4 of physical memory)");
  flags.AddDouble("memory-wait-s", &f.memory_wait_s, "S",
                  "how long a request waits for --memory-budget-mib to have room (at most\n"
                  "its own deadline; 0 = refused at once)");
  flags.AddInt64("client-memory-mib", &f.client_memory_mib, "MIB",
                 "memory one client's requests may reserve (0 = auto: half the budget)");
  flags.AddInt64("max-request-nodes", &f.max_request_nodes, "N",
                 "budget of one request: sampled nodes (bound computed before any work)");
  flags.AddInt64("max-request-edges", &f.max_request_edges, "N",
                 "budget of one request: sampled edges");
  flags.AddInt64("max-request-mib", &f.max_request_mib, "MIB",
                 "budget of one request: MiB of arrays (ids, edges, feature rows)");
  flags.AddBool("shm", &f.shm, "send batches to same-host trainers through shared memory");
  flags.AddInt64("malloc-reuse-mib", &f.malloc_reuse_mib, "MIB",
                 "glibc keeps freed blocks up to this size for reuse (GLIBC_TUNABLES mmap\n"
                 "threshold; trim threshold 2x; set at start by re-executing once): a\n"
                 "batch's big buffers cost no fresh pages. 0 = glibc's defaults");
  flags.AddString("peer-features", &f.peer_features, "local|rpc",
                  "local: read feature rows of same-host peers from their mmap'ed parts in\n"
                  "--partition; rpc: always ask peers with GatherFeatures");
  flags.AddString("peer-sampling", &f.peer_sampling, "local|rpc",
                  "local: sample same-host peers' parts in-process from their mmap'ed files\n"
                  "in --partition; rpc: always ask peers with SampleOneHop");
  flags.AddBool("isolated-peers", &f.isolated_peers,
                "treat every peer as on another host: no peer's part read from --partition,\n"
                "no shared-memory answers; every remote hop and row crosses the network\n"
                "(overrides --peer-features/--peer-sampling; docs/SERVER.md)");
  flags.AddInt("peer-cache-mib", &f.peer_cache_mib, "N",
               "cache of hot remote feature rows (most in-edges from this part), MiB;\n"
               "filled in the background at start; 0 = none");
  flags.AddInt("peer-piece-mib", &f.peer_piece_mib, "N",
               "a peer's feature rows of one request are asked in pieces of at most N MiB,\n"
               "all in flight at once; 0 = in one piece",
               {.min = 0, .max = 1024});
  flags.AddString("peer-dtype", &f.peer_dtype, "float32|float16|bfloat16",
                  "dtype float32 feature rows cross from peers in (widened on arrival;\n"
                  "16-bit: half the bytes, values rounded to that format)");
  flags.AddInt("bulk-port", &f.bulk_port, "PORT",
               "TCP port of the bulk transport, on the host of --listen (0 = any free port,\n"
               "-1 = none); published to peers in GetMetadata");
  flags.AddChoice("peer-transport", &f.peer_transport, {"bulk", "grpc"},
                  "how SampleOneHop and GatherFeatures reach peers asked over the network:\n"
                  "bulk: raw arrays on their bulk ports (docs/TRANSPORT.md); grpc: protobuf");
  flags.AddInt("bulk-max-frame-mib", &f.bulk_max_frame_mib, "MIB",
               "largest bulk frame sent or accepted; bigger ones are refused");
  flags.AddInt("bulk-connections", &f.bulk_connections, "N",
               "TCP connections to each peer's bulk port");
  flags.AddString("metrics-listen", &f.metrics_listen, "HOST:PORT",
                  "serve GET /metrics (Prometheus text) over HTTP here; port 0 = any free\n"
                  "port (logged, and published in GetMetadata); empty = none");
  flags.AddDouble("progress-every-s", &f.progress_every_s, "S",
                  "loading the part: a progress line every S seconds on stderr when it is\n"
                  "not a terminal (redrawn in place on a terminal)");
  graphshard::rpc::AddSecurityFlags(flags, &f.security);
}

// The steps of OptionsFromFlags, in order: each checks its flags (the first bad one is the
// error, as Fail gives it) and sets their options.

// Where the part is, how the server answers: timeouts, threads, streams, memory, limits.
absl::Status SetServiceOptions(const Flags& f, graphshard::server::ServerOptions& options) {
  options.partition_dir = f.partition;
  options.part = f.part;
  options.listen = f.listen;
  options.registry_dir = f.registry;
  options.rpc_timeout = absl::Seconds(f.rpc_timeout_s);
  options.stall_timeout = absl::Seconds(f.stall_timeout_s);
  options.replica = f.replica;
  options.threads = f.threads;
  options.service.prefetch = f.prefetch;
  options.service.max_streams = f.max_streams;
  if (f.max_client_streams < 1) return Fail("--max-client-streams must be >= 1");
  options.service.max_client_streams = f.max_client_streams;
  if (f.memory_budget_mib < 0 || f.client_memory_mib < 0) {
    return Fail("--memory-budget-mib and --client-memory-mib must be >= 0 (0 = auto)");
  }
  constexpr int64_t kMaxMib = int64_t{1} << 40;  // MiB values shifted to bytes must fit
  const int64_t budget_mib =
      std::min(kMaxMib, f.memory_budget_mib > 0 ? f.memory_budget_mib : MemoryBudgetMib());
  const int64_t client_mib =
      std::min(kMaxMib, f.client_memory_mib > 0 ? f.client_memory_mib : budget_mib / 2);
  options.service.memory_budget_bytes = budget_mib << 20;
  options.service.client_memory_bytes = client_mib << 20;
  if (!(f.memory_wait_s >= 0 && f.memory_wait_s <= 3600)) {
    return Fail("--memory-wait-s must be between 0 and 3600");
  }
  options.service.memory_wait = absl::Seconds(f.memory_wait_s);
  if (f.max_request_nodes < 1 || f.max_request_edges < 1 || f.max_request_mib < 1 ||
      f.max_request_mib > kMaxMib) {
    return Fail("--max-request-nodes, --max-request-edges and --max-request-mib must be >= 1");
  }
  options.limits.max_request_nodes = f.max_request_nodes;
  options.limits.max_request_edges = f.max_request_edges;
  options.limits.max_request_bytes = f.max_request_mib << 20;
  options.service.shared_memory = f.shm;
  return absl::OkStatus();
}

// How the server reaches its peers (--peer-*, --bulk-*) and serves metrics.
absl::Status SetPeerOptions(const Flags& f, graphshard::server::ServerOptions& options) {
  if (f.peer_features != "local" && f.peer_features != "rpc") {
    return Fail("--peer-features must be local or rpc");
  }
  options.peer_features = f.peer_features == "rpc" ? graphshard::server::PeerFeatures::kRpc
                                                   : graphshard::server::PeerFeatures::kLocal;
  if (f.peer_sampling != "local" && f.peer_sampling != "rpc") {
    return Fail("--peer-sampling must be local or rpc");
  }
  options.peer_sampling = f.peer_sampling == "rpc" ? graphshard::server::PeerSampling::kRpc
                                                   : graphshard::server::PeerSampling::kLocal;
  options.isolated_peers = f.isolated_peers;
  if (f.peer_cache_mib < 0) return Fail("--peer-cache-mib must be >= 0");
  options.peer_cache_bytes = int64_t{f.peer_cache_mib} << 20;
  options.peer_piece_bytes = int64_t{f.peer_piece_mib} << 20;
  absl::StatusOr<graphshard::common::FeatureDtype> peer_dtype =
      graphshard::common::ParseFeatureDtype(f.peer_dtype);
  if (!peer_dtype.ok()) return Fail(absl::StrCat("--peer-dtype: ", peer_dtype.status().message()));
  options.peer_dtype = *peer_dtype;
  options.peer_transport = f.peer_transport == "bulk" ? graphshard::server::PeerTransport::kBulk
                                                      : graphshard::server::PeerTransport::kGrpc;
  if (f.bulk_port < -1 || f.bulk_port > 65535) return Fail("--bulk-port must be -1..65535");
  options.bulk_port = f.bulk_port;
  if (f.bulk_max_frame_mib < 1 || f.bulk_max_frame_mib > 1024 * 1024) {
    return Fail("--bulk-max-frame-mib must be 1..1048576");
  }
  options.bulk.max_frame_bytes = static_cast<uint64_t>(f.bulk_max_frame_mib) << 20;
  if (f.bulk_connections < 1 || f.bulk_connections > 64) {
    return Fail("--bulk-connections must be 1..64");
  }
  options.bulk.connections_per_peer = f.bulk_connections;
  options.metrics_listen = f.metrics_listen;
  return absl::OkStatus();
}

// Loading progress, the checks of the required and numeric flags, the explicit peer list.
absl::Status SetRunOptions(const Flags& f, graphshard::server::ServerOptions& options) {
  if (!(f.progress_every_s > 0)) return Fail("--progress-every-s must be > 0");
  options.load_progress = {.log = &std::cerr,
                           .terminal = graphshard::common::IsTerminal(2),
                           .interval_s = f.progress_every_s,
                           .prefix = "graphshard-server: "};
  if (options.threads < 0) return Fail("--threads must be >= 0");
  if (options.service.prefetch < 0) return Fail("--prefetch must be >= 0 (0 = auto)");
  if (options.service.prefetch == 0) options.service.prefetch = AutoPrefetch(options.threads);
  if (options.service.max_streams < 1) return Fail("--max-streams must be >= 1");
  if (options.partition_dir.empty()) return Fail("--partition is required");
  if (options.part < 0) return Fail("--part is required (0-based part index)");
  if (f.rpc_timeout_s <= 0) return Fail("--rpc_timeout_s must be > 0");
  if (f.stall_timeout_s <= 0) return Fail("--stall-timeout-s must be > 0");
  if (f.replica < 0) return Fail("--replica must be >= 0");
  if (!f.servers.empty()) {
    auto list = graphshard::common::ParseAddressList(f.servers);
    if (!list.ok()) return Fail(std::string(list.status().message()));
    options.peer_addresses = *list;
  }
  return absl::OkStatus();
}

// The job token and TLS (rpc/security.h); under TLS the bulk transport is off.
absl::Status SetSecurityOptions(const Flags& f, const graphshard::common::FlagSet& flags,
                                graphshard::server::ServerOptions& options) {
  absl::Status security = graphshard::rpc::ApplySecurityFlags(
      f.security, graphshard::rpc::Role::kServer, &options.rpc);
  if (!security.ok()) return Fail(std::string(security.message()));
  if (options.rpc.credentials == graphshard::rpc::CredentialsKind::kTls) {
    // The bulk transport has no TLS (docs/SECURITY.md): under TLS peers talk gRPC only.
    if (flags.IsSet("peer-transport") && f.peer_transport == "bulk") {
      return Fail("--peer-transport bulk has no TLS; with --tls-ca use --peer-transport grpc");
    }
    if (flags.IsSet("bulk-port") && f.bulk_port >= 0) {
      return Fail("--bulk-port: the bulk transport has no TLS; with --tls-ca it is off");
    }
    options.bulk_port = -1;
    options.peer_transport = graphshard::server::PeerTransport::kGrpc;
  }
  return absl::OkStatus();
}

absl::StatusOr<graphshard::server::ServerOptions> OptionsFromFlags(
    const Flags& f, const graphshard::common::FlagSet& flags) {
  graphshard::server::ServerOptions options;
  RETURN_IF_ERROR(SetServiceOptions(f, options));
  RETURN_IF_ERROR(SetPeerOptions(f, options));
  RETURN_IF_ERROR(SetRunOptions(f, options));
  RETURN_IF_ERROR(SetSecurityOptions(f, flags, options));
  return options;
}

// Blocks the stop signals in every thread started after this call (gRPC's included); main
// waits for them with sigwait.
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

void LogServing(const graphshard::server::ServerOptions& options,
                const graphshard::server::PartitionServer& server) {
  std::fprintf(stderr, "graphshard-server: part %d%s of %s serving at %s (%s)\n", options.part,
               options.replica > 0 ? absl::StrCat(" (replica ", options.replica, ")").c_str() : "",
               options.partition_dir.c_str(), server.address().c_str(),
               graphshard::rpc::DescribeSecurity(options.rpc).c_str());
  if (server.metrics_port() > 0) {
    std::fprintf(stderr, "graphshard-server: part %d metrics at http://%s:%d/metrics\n",
                 options.part,
                 options.metrics_listen.substr(0, options.metrics_listen.rfind(':')).c_str(),
                 server.metrics_port());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  // Abseil spellings: this binary used Abseil flags, and scripts pass --rpc_timeout_s.
  graphshard::common::FlagSet flags(
      "usage: graphshard-server --partition DIR --part K [--listen HOST:PORT] "
      "[--registry DIR | --servers H:P,...] [flags]\n"
      "Flags may be spelled with dashes or underscores (--rpc-timeout-s = --rpc_timeout_s).",
      {.abseil_spellings = true});
  RegisterFlags(flags, f);
  absl::StatusOr<graphshard::common::ParsedArgs> parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "graphshard-server: %s\n", std::string(parsed.status().message()).c_str());
    return graphshard::common::kExitUsageError;
  }
  if (parsed->help) {
    std::fputs(flags.Usage().c_str(), stdout);
    return 0;
  }
  if (f.malloc_reuse_mib < 0 || f.malloc_reuse_mib > 65536) {
    std::fprintf(stderr, "graphshard-server: --malloc-reuse-mib must be 0..65536\n");
    return graphshard::common::kExitUsageError;
  }
  // Before any thread starts: the new image starts over from here with the tunables set.
  graphshard::server::ReexecWithMallocTunables(argv, f.malloc_reuse_mib);

  // Before any thread starts: gRPC's threads inherit the mask.
  const sigset_t stop_signals = BlockStopSignals();
  absl::StatusOr<graphshard::server::ServerOptions> options = OptionsFromFlags(f, flags);
  if (!options.ok()) return ExitWith(options.status());
  auto server = graphshard::server::PartitionServer::Start(*options);
  if (!server.ok()) return ExitWith(server.status());
  LogServing(*options, **server);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "graphshard-server: signal %d, draining and stopping\n", sig);
  (*server)->Shutdown(absl::Seconds(f.shutdown_grace_s));
  std::fprintf(stderr, "graphshard-server: stopped\n");
  return 0;
}
