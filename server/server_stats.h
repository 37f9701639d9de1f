#ifndef GRAPHSHARD_SERVER_SERVER_STATS_H_
#define GRAPHSHARD_SERVER_SERVER_STATS_H_

// Counters and latencies of one server, for the Stats RPC. Thread-safe.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/graphshard.pb.h"
#include "server/engine/cached_peers.h"
#include "server/engine/types.h"
#include "server/latency_histogram.h"

namespace graphshard::server {

// Bytes of this server's calls to peers (Stats.peer_*): its requests, their answers over the
// connection, and the answers' same-host shared-memory part. Shared (shared_ptr) with the calls
// in flight, which may end after the server (a cache fill given up at shutdown). Thread-safe.
class PeerTraffic {
 public:
  void Add(int64_t sent, int64_t received, int64_t shm_received) {
    sent_.fetch_add(sent, std::memory_order_relaxed);
    received_.fetch_add(received, std::memory_order_relaxed);
    shm_received_.fetch_add(shm_received, std::memory_order_relaxed);
  }
  int64_t sent() const { return sent_.load(std::memory_order_relaxed); }
  int64_t received() const { return received_.load(std::memory_order_relaxed); }
  int64_t shm_received() const { return shm_received_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> sent_{0}, received_{0}, shm_received_{0};
};

class ServerStats {
 public:
  void RecordCall(const std::string& method, absl::Duration latency, bool ok);
  void AddSampledEdges(int64_t n) { Add(&sampled_edges_, n); }
  void AddBatch() { Add(&batches_built_, 1); }
  void AddBytesSent(int64_t n) { Add(&bytes_sent_, n); }
  // A GatherFeatures answer: its rows and their bytes (Stats.gathered_rows / _row_bytes).
  void AddGatheredRows(int64_t rows, int64_t bytes) {
    Add(&gathered_rows_, rows);
    Add(&gathered_row_bytes_, bytes);
  }
  void AddShmBytes(int64_t n) { Add(&shm_bytes_, n); }
  void AddShmSegment(bool reused) { Add(reused ? &shm_reused_ : &shm_created_, 1); }
  void AddShmRingStall() { Add(&shm_ring_stalls_, 1); }
  // Stats.stream_* (proto/graphshard.proto), and the batch's build time to Stats.batch_build.
  void AddBuildProfile(const engine::BuildProfile& profile);
  // A SampleMinibatch answer: its build time to Stats.batch_build and its round trips to
  // Stats.peer_rounds / peer_requests (not Stats.stream_*).
  void RecordBatchBuild(const engine::BuildProfile& profile);
  void AddWriterTimes(double wait_build_s, double wait_ring_s, double write_s);
  // Where calls to peers count their bytes (Stats.peer_*); a call that may end after this
  // object holds the shared_ptr.
  const std::shared_ptr<PeerTraffic>& peer_traffic() const { return peer_traffic_; }
  void AddPeerTraffic(int64_t sent, int64_t received, int64_t shm_received) {
    peer_traffic_->Add(sent, received, shm_received);
  }
  // Stats.peer_cache from `cache` (null: none); it must outlive this object's Fill calls.
  void SetPeerCache(const engine::CachedPeers* cache) {
    absl::MutexLock lock(&mu_);
    cache_ = cache;
  }
  void StreamOpened() { Add(&active_streams_, 1); }
  void StreamClosed() { Add(&active_streams_, -1); }
  void StreamReclaimed() { Add(&streams_reclaimed_, 1); }
  int64_t active_streams();
  void Fill(v1::Stats* out);

 private:
  // The last kWindow latencies per method: p50/p99 over a recent window, in bounded memory.
  static constexpr size_t kWindow = 4096;
  struct Method {
    int64_t count = 0;
    int64_t errors = 0;
    std::vector<double> recent_ms;
    size_t next = 0;
  };
  void Add(int64_t* counter, int64_t n) {
    absl::MutexLock lock(&mu_);
    *counter += n;
  }
  absl::Mutex mu_;
  std::map<std::string, Method> methods_ ABSL_GUARDED_BY(mu_);
  int64_t sampled_edges_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t batches_built_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_sent_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t gathered_rows_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t gathered_row_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t shm_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t shm_created_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t shm_reused_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t shm_ring_stalls_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t active_streams_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t streams_reclaimed_ ABSL_GUARDED_BY(mu_) = 0;
  const std::shared_ptr<PeerTraffic> peer_traffic_ = std::make_shared<PeerTraffic>();
  const engine::CachedPeers* cache_ ABSL_GUARDED_BY(mu_) = nullptr;
  LatencyHistogram batch_build_;  // atomics: recorded without mu_
  engine::BuildProfile build_ ABSL_GUARDED_BY(mu_);
  double wait_build_s_ ABSL_GUARDED_BY(mu_) = 0;
  double wait_ring_s_ ABSL_GUARDED_BY(mu_) = 0;
  double write_s_ ABSL_GUARDED_BY(mu_) = 0;
};

// Records one call's latency and outcome when it goes out of scope.
class CallTimer {
 public:
  CallTimer(ServerStats& stats, std::string method)
      : stats_(stats), method_(std::move(method)), start_(absl::Now()) {}
  ~CallTimer() { stats_.RecordCall(method_, absl::Now() - start_, ok_); }
  void set_ok(bool ok) { ok_ = ok; }

 private:
  ServerStats& stats_;
  std::string method_;
  absl::Time start_;
  bool ok_ = true;
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_SERVER_STATS_H_
