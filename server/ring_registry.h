#ifndef GRAPHSHARD_SERVER_RING_REGISTRY_H_
#define GRAPHSHARD_SERVER_RING_REGISTRY_H_

// The stream rings of a server's clients, kept between their streams: a client that names its
// ring reader (StreamBatchesRequest.shm_ring_id) gets its next stream served from the ring of
// its last one, whose segments it has mapped already, instead of a new ring whose segments are
// allocated, zeroed and mapped again at every epoch. A client id is always served from its
// newest ring: a stream that finds the client's ring in use (two streams at once) gets a new
// ring, which becomes the client's; the older one ends with its stream (ShmRingReader relies
// on this to unmap older rings). A ring whose stream failed is dropped and its names unlinked
// (the client may not have opened every segment sent). Rings idle for longer than `idle`, and
// the oldest idle ones beyond `max_idle_rings`, are dropped (their segments unmapped here; a
// client that comes back gets a new ring). Thread-safe.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shm/ring.h"

namespace graphshard::server {

class RingRegistry {
 public:
  // Segment names: prefix + a number from `counter` (the server's).
  RingRegistry(std::string prefix, std::atomic<int64_t>* counter, absl::Duration idle,
               int max_idle_rings);
  // Ring ids are bound to the key of the client that first used them (kept for `kBindingTtl`
  // after their last use, at most kMaxBindings): PermissionDenied when `id` is bound to another
  // key, so that a stream under another client's id is refused instead of taking its ring.
  static constexpr absl::Duration kBindingTtl = absl::Hours(1);
  static constexpr int kMaxBindings = 4096;
  absl::Status Claim(uint64_t id, const std::string& key);
  // The ring for a new stream of client `id` (0: a ring of this stream alone) holding `key`. A
  // stream whose key does not match (it lost a race with Claim) gets a ring of its own.
  std::shared_ptr<shm::ShmRing> Acquire(uint64_t id, const std::string& key = "");
  // The stream of client `id` that used `ring` ended; `failed`: it did not end normally.
  void Release(uint64_t id, const std::shared_ptr<shm::ShmRing>& ring, bool failed);
  // Rings kept for clients now (in use or idle).
  int64_t size();

 private:
  struct Entry {
    std::shared_ptr<shm::ShmRing> ring;
    bool in_use = false;
    absl::Time idle_since;
  };
  void DropIdle(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Binds `id` to `key` (or checks it); false if bound to another key.
  bool Bind(uint64_t id, const std::string& key, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct Binding {
    std::string key;
    absl::Time last_used;
  };
  std::shared_ptr<shm::ShmRing> NewRing(const std::string& key);

  const std::string prefix_;
  std::atomic<int64_t>* counter_;
  const absl::Duration idle_;
  const int max_idle_rings_;
  absl::Mutex mu_;
  std::map<uint64_t, Entry> rings_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Binding> bindings_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_RING_REGISTRY_H_
