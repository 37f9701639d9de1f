#ifndef GRAPHSHARD_SERVER_ENGINE_CACHED_PEERS_H_
#define GRAPHSHARD_SERVER_ENGINE_CACHED_PEERS_H_

// engine::Peers decorator for fewer bytes between parts (docs/SERVER.md), whatever the
// transport underneath:
//  - a cache of hot remote feature rows: the rows of other parts' nodes with the most in-edges
//    from this part's nodes (the ones this part's sampling reaches most), up to a byte budget,
//    filled in the background through the inner Peers' GatherFeatures (in chunks); GatherFeatures
//    serves cached rows from memory and forwards only the misses, merged back in request order;
//  - the wire dtype: float32 rows are asked of peers as float16 / bfloat16 and widened on arrival
//    (half the bytes; the values are then rounded to that format, see docs/SERVER.md).
// With the wire dtype float32 the answers are byte-identical to the inner Peers' (the cache keeps
// float32 rows and converts them with the peer's own ConvertFloatRow). Every other call
// (SampleOneHop, GatherTable, MappedPart, SamplingPart) is forwarded unchanged (ForwardingPeers).
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"

namespace graphshard::engine {

struct CachedPeersOptions {
  int64_t capacity_bytes = 0;  // 0: no cache (the wire dtype alone)
  // float32 feature rows are asked of peers in this dtype and widened (exactly) on arrival;
  // rows asked in a 16-bit dtype are asked as such. The cache stores rows in this dtype.
  FeatureDtype wire_dtype = FeatureDtype::kFloat32;
  int64_t fill_chunk_bytes = int64_t{16} << 20;  // feature bytes per fill request
  // A part whose peer does not answer (not started yet, unreachable) is asked again after this
  // long, doubling up to retry_max, until it answers or the cache is destroyed. Start never waits.
  absl::Duration retry_min = absl::Milliseconds(200);
  absl::Duration retry_max = absl::Seconds(5);
  // Longest wait for one fill answer (the inner Peers' own deadline should end it first).
  absl::Duration fill_timeout = absl::Seconds(60);
  bool log = true;  // one stderr line per part filled (or failing to, the first time)
};

struct PeerCacheCounters {
  int64_t capacity_bytes = 0;
  int64_t rows = 0, bytes = 0;
  int64_t parts_filled = 0, parts_pending = 0;
  int64_t hits = 0, misses = 0, bytes_saved = 0, fill_bytes = 0;
  FeatureDtype store_dtype = FeatureDtype::kFloat32;
};

// The rows to cache: per part (index = part; this part's entry empty), per node type, the ids
// (ascending) of remote nodes with the most in-edges from this part's nodes, over every edge
// type, as many as `capacity_bytes` holds at `CacheRowBytes` each (ties: lower type, lower id).
std::vector<std::vector<TypedIds>> ChooseHotRows(const LocalPart& local, int64_t capacity_bytes,
                                                 FeatureDtype store_dtype);
// What one cached row of `feat_dim` costs: the row, its label and its index entry.
int64_t CacheRowBytes(int64_t feat_dim, FeatureDtype store_dtype);

class CachedPeers final : public ForwardingPeers {
 public:
  // `local` and `inner` must outlive this object. With capacity_bytes > 0, starts the fill
  // thread. The destructor stops it without waiting for fill answers (their callbacks stay safe
  // to run later); only an inner MappedPart call in progress (a metadata RPC) is waited for.
  CachedPeers(const LocalPart& local, Peers& inner, CachedPeersOptions options);
  ~CachedPeers() override;
  CachedPeers(const CachedPeers&) = delete;
  CachedPeers& operator=(const CachedPeers&) = delete;

  // Every other call is forwarded (ForwardingPeers): layer tables change from run to run and
  // are never cached.
  void GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                      Callback<std::vector<FeatureBlock>> done) override;

  PeerCacheCounters counters() const;
  // True once every part with chosen rows is filled (or read in-process), false after
  // `timeout`. For tests and benchmarks; the server never waits for it.
  bool WaitFilled(absl::Duration timeout);

 private:
  // One filled part's rows of one node type, in the store dtype.
  struct TypeRows {
    std::string node_type;
    int64_t feat_dim = 0;
    // id -> row. A dense table over the rows' id range where it costs no more memory than the
    // hash map (4 bytes per id of the range against ~16 per cached row; one random read per
    // lookup instead of a probe of a ~40 MB map), else the hash map.
    absl::flat_hash_map<int64_t, int64_t> row_of;
    int64_t dense_begin = 0;
    std::vector<int32_t> dense;  // row, or -1
    std::vector<char> features;
    std::vector<int64_t> labels;

    // The cached row of `id`, or -1.
    int64_t RowOf(int64_t id) const {
      if (!dense.empty()) {
        const uint64_t k = static_cast<uint64_t>(id - dense_begin);
        return k < dense.size() ? dense[k] : -1;
      }
      auto it = row_of.find(id);
      return it == row_of.end() ? -1 : it->second;
    }
    // Builds the dense table from row_of when it is no larger (then drops row_of).
    void MaybeDense();
  };
  struct PartRows {
    std::vector<TypeRows> types;
    const TypeRows* Find(const std::string& node_type) const;
  };
  struct Assembly;

  void FillLoop();
  // Fetches and publishes `part`'s rows; Unavailable etc. when the peer does not answer.
  absl::Status FillPart(int part, const std::vector<TypedIds>& rows);
  // A part the engine reads in-process (same-host peer, --peer-features local) needs no rows.
  absl::Status NotCached(int part);
  std::shared_ptr<const PartRows> RowsOf(int part) const;
  bool Stopping() const { return stop_.load(std::memory_order_acquire); }

  const LocalPart& local_;
  const CachedPeersOptions options_;
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<const PartRows>> parts_ ABSL_GUARDED_BY(mu_);
  int64_t rows_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t parts_filled_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t parts_pending_ ABSL_GUARDED_BY(mu_) = 0;
  bool fill_done_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;  // wakes the fill thread's waits
  std::atomic<int64_t> hits_{0}, misses_{0}, bytes_saved_{0}, fill_bytes_{0};
  std::atomic<bool> stop_{false};
  std::thread fill_;
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_CACHED_PEERS_H_
