// graphshard-server: serves one part of a partition folder over gRPC until SIGTERM/SIGINT.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "common/flag_spelling.h"
#include "common/registry.h"
#include "server/partition_server.h"

ABSL_FLAG(std::string, partition, "", "partition folder (written by graphshard-partition)");
ABSL_FLAG(int, part, -1, "which part to serve");
ABSL_FLAG(std::string, listen, "127.0.0.1:0", "HOST:PORT to bind; port 0 = any free port");
ABSL_FLAG(std::string, registry, "", "registry folder: publish our address, find peers");
ABSL_FLAG(std::string, servers, "", "explicit peer addresses host:port,... (index = part)");
ABSL_FLAG(double, rpc_timeout_s, 30, "deadline of every call to a peer, seconds");
ABSL_FLAG(double, shutdown_grace_s, 10, "how long in-flight calls may finish at shutdown");
ABSL_FLAG(int, threads, 0, "threads building minibatches (0 = all hardware threads)");
ABSL_FLAG(int, prefetch, 4, "minibatches prepared ahead per stream");
ABSL_FLAG(int, max_streams, 64, "concurrent batch streams; more get RESOURCE_EXHAUSTED");
ABSL_FLAG(bool, shm, true, "send batches to same-host trainers through shared memory");
ABSL_FLAG(std::string, peer_features, "local",
          "local: read feature rows of same-host peers from their mmap'ed parts in --partition; "
          "rpc: always ask peers with GatherFeatures");
ABSL_FLAG(std::string, peer_sampling, "local",
          "local: sample same-host peers' parts in-process from their mmap'ed files in "
          "--partition; rpc: always ask peers with SampleOneHop");

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "graphshard-server: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "graphshard-server --partition DIR --part K [--listen HOST:PORT] "
      "[--registry DIR | --servers H:P,...]");
  std::vector<std::string> storage;
  std::vector<char*> args = graphshard::common::UnderscoreFlagNames(argc, argv, storage);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());

  // Block the stop signals in every thread (gRPC's included); main waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  graphshard::server::ServerOptions options;
  options.partition_dir = absl::GetFlag(FLAGS_partition);
  options.part = absl::GetFlag(FLAGS_part);
  options.listen = absl::GetFlag(FLAGS_listen);
  options.registry_dir = absl::GetFlag(FLAGS_registry);
  options.rpc_timeout = absl::Seconds(absl::GetFlag(FLAGS_rpc_timeout_s));
  options.threads = absl::GetFlag(FLAGS_threads);
  options.service.prefetch = absl::GetFlag(FLAGS_prefetch);
  options.service.max_streams = absl::GetFlag(FLAGS_max_streams);
  options.service.shared_memory = absl::GetFlag(FLAGS_shm);
  const std::string peer_features = absl::GetFlag(FLAGS_peer_features);
  if (peer_features != "local" && peer_features != "rpc") {
    return Fail("--peer-features must be local or rpc");
  }
  options.peer_features = peer_features == "rpc" ? graphshard::server::PeerFeatures::kRpc
                                                 : graphshard::server::PeerFeatures::kLocal;
  const std::string peer_sampling = absl::GetFlag(FLAGS_peer_sampling);
  if (peer_sampling != "local" && peer_sampling != "rpc") {
    return Fail("--peer-sampling must be local or rpc");
  }
  options.peer_sampling = peer_sampling == "rpc" ? graphshard::server::PeerSampling::kRpc
                                                 : graphshard::server::PeerSampling::kLocal;
  if (options.threads < 0) return Fail("--threads must be >= 0");
  if (options.service.prefetch < 1) return Fail("--prefetch must be >= 1");
  if (options.service.max_streams < 1) return Fail("--max-streams must be >= 1");
  if (options.partition_dir.empty()) return Fail("--partition is required");
  if (options.part < 0) return Fail("--part is required (0-based part index)");
  if (absl::GetFlag(FLAGS_rpc_timeout_s) <= 0) return Fail("--rpc_timeout_s must be > 0");
  if (!absl::GetFlag(FLAGS_servers).empty()) {
    auto list = graphshard::common::ParseAddressList(absl::GetFlag(FLAGS_servers));
    if (!list.ok()) return Fail(std::string(list.status().message()));
    options.peer_addresses = *list;
  }

  auto server = graphshard::server::PartitionServer::Start(options);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  std::fprintf(stderr, "graphshard-server: part %d of %s serving at %s\n", options.part,
               options.partition_dir.c_str(), (*server)->address().c_str());

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "graphshard-server: signal %d, draining and stopping\n", sig);
  (*server)->Shutdown(absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_s)));
  std::fprintf(stderr, "graphshard-server: stopped\n");
  return 0;
}
