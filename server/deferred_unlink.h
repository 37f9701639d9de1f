#ifndef GRAPHSHARD_SERVER_DEFERRED_UNLINK_H_
#define GRAPHSHARD_SERVER_DEFERRED_UNLINK_H_

// Shared-memory names handed to a client that should have opened (and so unlinked) them by now:
// one-shot segments of a stream that completed, GatherFeatures answers. A client that never
// opens them (gone, buggy, or not on this host at all) would leave them in /dev/shm until the
// server stops; each name is unlinked `grace` after it was handed out, whoever the client is
// (a name the client unlinked already is ignored). One thread; thread-safe.

#include <deque>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace graphshard::server {

class DeferredUnlinks {
 public:
  explicit DeferredUnlinks(absl::Duration grace);
  // Unlinks everything still pending.
  ~DeferredUnlinks();
  DeferredUnlinks(const DeferredUnlinks&) = delete;
  DeferredUnlinks& operator=(const DeferredUnlinks&) = delete;

  void Add(std::vector<std::string> names);
  // Names waiting (tests).
  int64_t pending();

 private:
  void Run();
  const absl::Duration grace_;
  absl::Mutex mu_;
  std::deque<std::pair<absl::Time, std::string>> names_ ABSL_GUARDED_BY(mu_);  // by deadline
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_DEFERRED_UNLINK_H_
