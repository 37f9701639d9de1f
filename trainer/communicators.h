#ifndef GRAPHSHARD_TRAINER_COMMUNICATORS_H_
#define GRAPHSHARD_TRAINER_COMMUNICATORS_H_

// The trainer's two client::Communicator implementations: Gloo over c10d (CPU; LibTorch,
// gloo_communicator.cc) and NCCL (CUDA; nccl_communicator.cc, or nccl_unavailable.cc in a
// build without CUDA and NCCL). The interface they implement, and the world-of-one, are
// Torch-free (client/communicator.h).

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "client/communicator.h"
#include "client/rendezvous.h"

namespace graphshard::trainer {

struct GlooOptions {
  double timeout_s = 300;  // Gloo's rendezvous and each collective
};

// A ProcessGroupGloo over `store` (the job's rendezvous store, kept by the communicator: on rank
// 0 it serves the others). The Gloo device binds GLOO_SOCKET_IFNAME if set, 127.0.0.1 when
// MASTER_ADDR is a loopback address (all ranks on this host), else this host's default
// address. Unavailable, naming MASTER_ADDR:MASTER_PORT, when the peers do not meet in time.
absl::StatusOr<std::unique_ptr<client::Communicator>> CreateGlooCommunicator(
    const client::RendezvousConfig& config, std::unique_ptr<client::KeyValueStore> store,
    const GlooOptions& options);

struct NcclOptions {
  int local_rank = 0;      // the rank's GPU is cuda:(local_rank % visible devices)
  double timeout_s = 300;  // each collective; then the communicator is aborted
  // Gradient all-reduces left running before QueueAllReduce waits for the oldest (0: wait for
  // each; client::ParseNcclQueueDepth).
  int queue_depth = client::kDefaultNcclQueueDepth;
  // The CUDA stream (a cudaStream_t) the collectives go on, asked at each call: the stream the
  // calling thread's training step computes on (gpu_memory.h, CurrentCudaStream), so that
  // gradients are complete before their all-reduce starts and the optimizer step runs after
  // it. Unset or nullptr: the device's legacy default stream.
  std::function<void*(int device)> stream_of;
};

// ncclCommInitRank over a unique id that rank 0 publishes in `store`; the communicator keeps the
// store. Unimplemented when graphshard was built without CUDA and NCCL; Internal / Unavailable
// with NCCL's message otherwise (e.g. two ranks on one GPU: "init failed").
absl::StatusOr<std::unique_ptr<client::Communicator>> CreateNcclCommunicator(
    const client::RendezvousConfig& config, std::unique_ptr<client::KeyValueStore> store,
    const NcclOptions& options);

// Whether this build has the NCCL communicator.
bool HaveNccl();

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_COMMUNICATORS_H_
