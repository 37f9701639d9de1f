#ifndef GRAPHSHARD_TRAINER_COMMUNICATOR_H_
#define GRAPHSHARD_TRAINER_COMMUNICATOR_H_

// Collectives among the trainers, over plain buffers (no Torch in this header): gradients and
// parameters are passed as spans of their contiguous storage. Implementations: Gloo over a c10d
// TCPStore rendezvous (CPU), and a local one for a single process. Every rank must call the
// same collectives in the same order. Not thread-safe: one thread drives a communicator.
// Every operation fails (never hangs past the timeout) when a peer is gone or late.

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "trainer/rendezvous.h"

namespace graphshard::trainer {

enum class ReduceOp { kSum, kMax };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // In place, element-wise over all ranks.
  virtual absl::Status AllReduce(absl::Span<float> data, ReduceOp op) = 0;
  virtual absl::Status AllReduce(absl::Span<double> data, ReduceOp op) = 0;
  virtual absl::Status AllReduce(absl::Span<int64_t> data, ReduceOp op) = 0;
  // Overwrites `data` on every rank with root's.
  virtual absl::Status Broadcast(absl::Span<float> data, int root) = 0;
  virtual absl::Status Barrier() = 0;
};

// World of one: every collective is the identity.
std::unique_ptr<Communicator> CreateLocalCommunicator();

struct GlooOptions {
  double timeout_s = 300;  // rendezvous (TCPStore) and each collective
};

// Rendezvous at MASTER_ADDR:MASTER_PORT (rank 0 hosts the TCPStore) and a ProcessGroupGloo.
// The Gloo device binds GLOO_SOCKET_IFNAME if set, 127.0.0.1 when MASTER_ADDR is a loopback
// address (all ranks on this host), else this host's default address. Unavailable or
// DeadlineExceeded, naming the address, when the peers do not meet in time.
absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(const RendezvousConfig& config,
                                                                     const GlooOptions& options);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_COMMUNICATOR_H_
