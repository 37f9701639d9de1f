// graphshard-trainer: one trainer rank. See --help (client/options.h) and docs/DESIGN.md.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "absl/status/status.h"
#include "client/communicator.h"
#include "client/device_share.h"
#include "client/options.h"
#include "client/rank_heartbeats.h"
#include "client/rendezvous.h"
#include "client/rendezvous_store.h"
#include "client/server_set.h"
#include "common/registry.h"
#include "common/status_macros.h"
#include "rpc/security.h"
#include "trainer/communicators.h"
#include "trainer/gpu_memory.h"
#include "trainer/inference.h"
#include "trainer/model_registry.h"
#include "trainer/train.h"

namespace graphshard::trainer {
namespace {

absl::StatusOr<std::unique_ptr<client::Communicator>> MakeCommunicator(
    const client::TrainerOptions& options, const client::RendezvousConfig& rdv,
    const rpc::RpcOptions& rpc) {
  const bool nccl = options.backend == client::Backend::kNccl ||
                    (options.backend == client::Backend::kAuto &&
                     options.device == client::DeviceKind::kCuda && HaveNccl());
  if (rdv.world_size == 1 && std::getenv("MASTER_PORT") == nullptr) {
    return client::CreateLocalCommunicator();
  }
  // Rank 0 serves the store on MASTER_ADDR:MASTER_PORT, with the job token and TLS of the
  // trainer's other calls (rendezvous_store.h).
  absl::StatusOr<std::unique_ptr<client::KeyValueStore>> store =
      client::CreateRendezvousStore(rdv, rpc, options.collective_timeout_s);
  if (!store.ok()) return store.status();
  if (nccl) {
    ASSIGN_OR_RETURN(const int queue_depth, client::ParseNcclQueueDepth(client::ProcessEnv()));
    return CreateNcclCommunicator(rdv, *std::move(store),
                                  NcclOptions{.local_rank = rdv.local_rank,
                                              .timeout_s = options.collective_timeout_s,
                                              .queue_depth = queue_depth,
                                              .stream_of = CurrentCudaStream});
  }
  return CreateGlooCommunicator(rdv, *std::move(store),
                                GlooOptions{.timeout_s = options.collective_timeout_s});
}

// Each heartbeat write or read waits at most this long for the store (rank 0's).
constexpr double kHeartbeatStoreTimeoutS = 5;

absl::Status Run(const client::TrainerOptions& options) {
  absl::StatusOr<client::RendezvousConfig> rdv = client::ParseRendezvous(client::ProcessEnv());
  if (!rdv.ok()) return rdv.status();
  // How the shared device tier's shares travel: a bad value stops the trainer here, not later
  // as a share that "does not fit".
  if (absl::StatusOr<bool> vmm = client::WantVmmShares(client::ProcessEnv()); !vmm.ok()) {
    return vmm.status();
  }
  std::cerr << "rank " << rdv->rank << " of " << rdv->world_size << " (local " << rdv->local_rank
            << "), rendezvous " << rdv->master_addr << ":" << rdv->master_port << std::endl;

  // Servers first (each rank with its own deadline), then the rendezvous: a rank that cannot
  // reach its servers exits, and its peers fail at the rendezvous or first collective.
  client::DiscoveryOptions discovery;
  discovery.registry_dir = options.registry_dir;
  discovery.servers = options.servers;
  discovery.server_wait_s = options.server_wait_s;
  discovery.client.rpc_timeout_s = options.rpc_timeout_s;
  discovery.client.stall_timeout_s = options.stall_timeout_s;
  if (absl::Status s =
          rpc::ApplySecurityFlags(options.security, rpc::Role::kClient, &discovery.client.rpc);
      !s.ok()) {
    return s;
  }
  if (rdv->world_size > 1 && rdv->rank == 0 &&
      discovery.client.rpc.credentials == rpc::CredentialsKind::kTls &&
      discovery.client.rpc.tls.key_pem.empty()) {
    // Found now rather than after the servers: the other ranks would wait for it.
    return absl::InvalidArgumentError(
        "rank 0 serves the rendezvous store (MASTER_ADDR:MASTER_PORT): under TLS (--tls-ca) "
        "it needs --tls-cert and --tls-key");
  }
  if (!discovery.client.rpc.token.empty() && !options.registry_dir.empty()) {
    if (absl::Status s = common::CheckRegistryFolder(options.registry_dir); !s.ok()) return s;
  }
  absl::StatusOr<client::ServerSet> servers = client::ConnectServers(discovery);
  if (!servers.ok()) return servers.status();

  absl::StatusOr<std::unique_ptr<client::Communicator>> comm =
      MakeCommunicator(options, *rdv, discovery.client.rpc);
  if (!comm.ok()) return comm.status();
  if ((*comm)->world_size() > 1) {
    // A failed collective then names the lost rank (rank_heartbeats.h).
    absl::StatusOr<std::unique_ptr<client::KeyValueStore>> beats =
        client::ConnectRendezvousStore(*rdv, discovery.client.rpc, kHeartbeatStoreTimeoutS);
    if (beats.ok()) {
      *comm = client::WithLossDiagnosis(
          *std::move(comm), std::make_unique<client::RankHeartbeats>(
                                *std::move(beats), rdv->rank, rdv->world_size,
                                client::JoinHostPort(rdv->master_addr, rdv->master_port)));
    } else {
      std::cerr << "warning: no heartbeats (a lost rank will not be named): "
                << beats.status().message() << std::endl;
    }
  }
  RunEnvironment env{.local_rank = rdv->local_rank,
                     .log_is_terminal = ::isatty(STDERR_FILENO) == 1};
  if (options.infer) return RunInference(options, *servers, **comm, std::cout, std::cerr, env);
  absl::StatusOr<client::TrainSummary> summary =
      RunTraining(options, *servers, **comm, std::cout, std::cerr, env);
  if (!summary.ok()) return summary.status();
  return absl::OkStatus();
}

}  // namespace
}  // namespace graphshard::trainer

int main(int argc, char** argv) {
  absl::StatusOr<graphshard::client::TrainerOptions> options =
      graphshard::client::ParseTrainerOptions(argc, argv, graphshard::trainer::RegisteredModels());
  if (absl::IsCancelled(options.status())) {  // --help
    std::cout << options.status().message();
    return 0;
  }
  if (!options.ok()) {
    std::cerr << "graphshard-trainer: error: " << options.status().message() << std::endl;
    return 2;
  }
  absl::Status s = graphshard::trainer::Run(*options);
  if (absl::IsAborted(s)) {  // --stop-after-steps
    std::cerr << "graphshard-trainer: " << s.message() << std::endl;
    return 3;
  }
  if (!s.ok()) {
    std::cerr << "graphshard-trainer: error: " << s.ToString() << std::endl;
    return absl::IsInvalidArgument(s) ? 2 : 1;
  }
  return 0;
}
