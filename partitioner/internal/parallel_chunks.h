#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_PARALLEL_CHUNKS_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_PARALLEL_CHUNKS_H_

// Runs work over fixed chunks of [0, n) on `threads` workers. The chunking depends only on n
// and `chunk`, never on the thread count, so work whose result depends on chunk boundaries
// (floating sums) comes out the same for any number of threads.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace graphshard::partitioner::internal {

inline int64_t NumChunks(int64_t n, int64_t chunk) { return (n + chunk - 1) / chunk; }

// Calls fn(chunk_index, begin, end) once per chunk, from up to `threads` threads (>= 1); `fn`
// returns absl::Status. After the first error no new chunk starts; returns that error.
template <typename Fn>
absl::Status ParallelChunks(int64_t n, int64_t chunk, int threads, Fn fn) {
  const int64_t chunks = NumChunks(n, chunk);
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  absl::Status first;
  auto worker = [&] {
    for (int64_t c = next++; c < chunks && !failed.load(); c = next++) {
      const int64_t begin = c * chunk, end = std::min(n, begin + chunk);
      absl::Status s = fn(c, begin, end);
      if (s.ok()) continue;
      std::lock_guard<std::mutex> lock(mu);
      if (first.ok()) first = s;
      failed = true;
    }
  };
  const int t = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(chunks, 1)));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(t - 1));
  for (int i = 1; i < t; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& th : pool) th.join();
  return first;
}

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_PARALLEL_CHUNKS_H_
