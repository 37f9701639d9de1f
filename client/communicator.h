#ifndef GRAPHSHARD_CLIENT_COMMUNICATOR_H_
#define GRAPHSHARD_CLIENT_COMMUNICATOR_H_

// Collectives among the trainers, over plain buffers (no Torch in this header): gradients and
// parameters are passed as spans of their contiguous storage. Implementations: Gloo (CPU) and
// NCCL (GPU), both meeting through the job's rendezvous store (a KeyValueStore:
// client/rendezvous_store.h), and a local one for a single process. Every rank must call the
// same collectives in the same order. Not thread-safe: one thread drives a communicator.
// Every operation fails (never hangs past the timeout) when a peer is gone or late.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/rendezvous.h"

namespace graphshard::client {

enum class ReduceOp { kSum, kMax };

// Where the float buffers of AllReduce(Span<float>) and Broadcast live.
enum class MemorySpace { kHost, kCuda };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual const char* name() const = 0;  // "local", "gloo", "nccl"
  // kHost (Gloo, local) or kCuda (NCCL: pointers into this rank's GPU, the device it was made
  // for; work is ordered after what was queued on that device's default stream). The double
  // and int64 collectives (counts, metrics) always take host memory.
  virtual MemorySpace float_memory() const { return MemorySpace::kHost; }
  // In place, element-wise over all ranks.
  virtual absl::Status AllReduce(absl::Span<float> data, ReduceOp op) = 0;
  virtual absl::Status AllReduce(absl::Span<double> data, ReduceOp op) = 0;
  virtual absl::Status AllReduce(absl::Span<int64_t> data, ReduceOp op) = 0;
  // As AllReduce(Span<float>), but may return once the work is queued, before it is done (NCCL:
  // on the stream LibTorch queues on, so what is queued after it sees the result); the next
  // collective, or Flush(), first waits for it, with the timeout. Gloo runs it at once.
  virtual absl::Status QueueAllReduce(absl::Span<float> data, ReduceOp op) {
    return AllReduce(data, op);
  }
  // Waits (with the timeout) for what QueueAllReduce left running.
  virtual absl::Status Flush() { return absl::OkStatus(); }
  // Overwrites `data` on every rank with root's.
  virtual absl::Status Broadcast(absl::Span<float> data, int root) = 0;
};

// Every rank's `mine`, index = rank, through one AllReduce(Span<int64_t>) SUM of world_size
// slots of max_bytes (each rank fills only its own). Every rank must call it at the same point.
// InvalidArgument naming the rank, on every rank, when one rank's string is over max_bytes.
absl::StatusOr<std::vector<std::string>> AllGatherStrings(Communicator& comm,
                                                          const std::string& mine,
                                                          size_t max_bytes = 256);

// World of one: every collective is the identity.
std::unique_ptr<Communicator> CreateLocalCommunicator();

// How many gradient all-reduces an NCCL trainer leaves running before it waits for the oldest
// (Communicator::QueueAllReduce): GRAPHSHARD_NCCL_QUEUE_DEPTH, 0-64 (0: wait for every one);
// unset or empty: kDefaultNcclQueueDepth; GRAPHSHARD_NCCL_WAIT_EACH_STEP=1 (the older switch):
// 0. InvalidArgument naming the variable and its value otherwise. The depth changes how far the
// CPU runs ahead of its GPU, not what is computed (tests/bench/nccl_queue_depth_gpu_check.sh).
inline constexpr int kDefaultNcclQueueDepth = 3;
absl::StatusOr<int> ParseNcclQueueDepth(const EnvLookup& env);

// A rendezvous key-value store: rank 0 serves it at MASTER_ADDR:MASTER_PORT, bound to that
// address only and behind the job token (client/rendezvous_store.h). Every call is bounded: a
// store that does not answer is an error (Unavailable / DeadlineExceeded naming the store and
// the key), never a hang. Thread-safe.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  // How long Get(key) and Wait wait by default; also the deadline of every other call.
  virtual absl::Duration timeout() const = 0;
  virtual absl::Status Set(const std::string& key, const std::string& value) = 0;
  // Waits for the key up to `wait`: DeadlineExceeded naming it then.
  virtual absl::StatusOr<std::string> Get(const std::string& key, absl::Duration wait) = 0;
  absl::StatusOr<std::string> Get(const std::string& key) { return Get(key, timeout()); }
  // Sets `desired` if the key holds `expected` (or is unset and `expected` is empty); returns
  // the key's value afterwards.
  virtual absl::StatusOr<std::string> CompareSet(const std::string& key,
                                                 const std::string& expected,
                                                 const std::string& desired) = 0;
  // Adds `delta` to the key's decimal value (0 when unset); returns the sum.
  virtual absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) = 0;
  // Whether every key is set, without waiting for them.
  virtual absl::StatusOr<bool> Check(const std::vector<std::string>& keys) = 0;
  absl::StatusOr<bool> Contains(const std::string& key) { return Check({key}); }
  // Waits until every key is set, up to `wait`: DeadlineExceeded naming those still unset.
  virtual absl::Status Wait(const std::vector<std::string>& keys, absl::Duration wait) = 0;
  // Whether the key was set.
  virtual absl::StatusOr<bool> Delete(const std::string& key) = 0;
  virtual absl::StatusOr<int64_t> NumKeys() = 0;
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_COMMUNICATOR_H_
