#ifndef GRAPHSHARD_CLIENT_INTERNAL_STORE_TABLE_H_
#define GRAPHSHARD_CLIENT_INTERNAL_STORE_TABLE_H_

// The table behind the rendezvous store's service (client/rendezvous_store.h): keys to byte
// values, with waits for keys to appear, and limits on what one client may make it hold, so
// that a job's process cannot exhaust rank 0 (RESOURCE_EXHAUSTED). Transport-free.
// Thread-safe: every method may be called from any thread.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace graphshard::client {

// What the store holds at most. The defaults fit Gloo's rendezvous of thousands of ranks (each
// rank's value lists its address for every peer: ~140 bytes a peer) with room to spare.
struct StoreLimits {
  int64_t max_key_bytes = 4096;
  int64_t max_value_bytes = 4 << 20;
  int64_t max_keys = 1 << 16;
  int64_t max_total_bytes = 128 << 20;  // keys and values together
  int64_t max_keys_per_call = 1 << 16;  // Check and Wait
  int64_t max_waiters = 1024;           // Get and Wait calls waiting at once
  absl::Duration max_wait = absl::Hours(1);
};

// Tells a waiting call to give up (the client left): polled while waiting.
using CancelledFn = std::function<bool()>;

class StoreTable {
 public:
  explicit StoreTable(StoreLimits limits = {}) : limits_(limits) {}

  // ResourceExhausted naming the limit when the key, the value, the number of keys or the
  // total size would pass it.
  absl::Status Set(const std::string& key, const std::string& value);
  // Sets `desired` if the key holds `expected`, or is unset and `expected` is empty; returns the
  // key's value afterwards ("" if it stays unset).
  absl::StatusOr<std::string> CompareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired);
  // The key's value once it is set. DeadlineExceeded naming the key at `deadline` (capped at
  // now + max_wait); Cancelled when `cancelled` says so; Unavailable once closed;
  // ResourceExhausted when max_waiters calls already wait.
  absl::StatusOr<std::string> Get(const std::string& key, absl::Time deadline,
                                  const CancelledFn& cancelled);
  // Adds `delta` to the key's decimal value (unset: 0) and returns the sum. InvalidArgument if
  // the key holds something else or the sum overflows.
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta);
  absl::StatusOr<bool> Check(const std::vector<std::string>& keys);
  // As Get, for every key of `keys`; the deadline's message names the keys still unset.
  absl::Status Wait(const std::vector<std::string>& keys, absl::Time deadline,
                    const CancelledFn& cancelled);
  // Whether the key was set.
  bool Delete(const std::string& key);
  int64_t NumKeys();
  // Wakes every waiting call (Unavailable) and refuses new waits: for shutting the server down.
  void Close();

 private:
  absl::Status CheckKey(const std::string& key) const;
  absl::Status CheckKeys(const std::vector<std::string>& keys) const;
  // Stores key = value, within the limits.
  absl::Status PutLocked(const std::string& key, std::string value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until every key is set, the deadline, cancellation or Close.
  absl::Status AwaitKeys(const std::vector<std::string>& keys, absl::Time deadline,
                         const CancelledFn& cancelled) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AllSetLocked(const std::vector<std::string>& keys) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const StoreLimits limits_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> values_ ABSL_GUARDED_BY(mu_);
  int64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t waiters_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_INTERNAL_STORE_TABLE_H_
