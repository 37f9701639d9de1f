#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_EDGE_SCAN_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_EDGE_SCAN_H_

// A pass over one edge type's edges that keeps the resident set small: after every chunk it
// drops the chunk's pages of mmap'ed inputs (re-read from the page cache if needed later).

#include <algorithm>
#include <cstdint>
#include <mutex>

#include "absl/status/status.h"
#include "partitioner/internal/parallel_chunks.h"

#include "partitioner/graph.h"
#include "partitioner/internal/progress.h"

namespace graphshard::partitioner::internal {

inline constexpr int64_t kEdgeChunk = int64_t{1} << 20;

// Calls fn(e) for every edge id e in ascending order; progress (may be null) advances by the
// edges seen.
template <typename Fn>
void ScanEdges(const EdgeTypeData& t, Progress* progress, Fn&& fn) {
  const int64_t m = t.num_edges();
  for (int64_t b = 0; b < m; b += kEdgeChunk) {
    const int64_t end = std::min(m, b + kEdgeChunk);
    for (int64_t e = b; e < end; ++e) fn(e);
    t.src_ids.ReleasePages(b, end);
    t.dst_ids.ReleasePages(b, end);
    if (progress != nullptr) progress->Add(end - b);
  }
}

// ScanEdges on `threads` workers, a chunk at a time: fn(b, end) is called once per chunk of
// edge ids [b, end), from any worker, in no particular order (fn must be safe to call
// concurrently); progress advances under a lock.
template <typename Fn>
void ParallelScanEdgeChunks(const EdgeTypeData& t, Progress* progress, int threads, Fn&& fn) {
  std::mutex mu;
  (void)ParallelChunks(t.num_edges(), kEdgeChunk, threads, [&](int64_t, int64_t b, int64_t end) {
    fn(b, end);
    t.src_ids.ReleasePages(b, end);
    t.dst_ids.ReleasePages(b, end);
    if (progress != nullptr) {
      std::lock_guard<std::mutex> lock(mu);
      progress->Add(end - b);
    }
    return absl::OkStatus();
  });
}

// ParallelScanEdgeChunks one edge at a time: fn(e) is called once per edge.
template <typename Fn>
void ParallelScanEdges(const EdgeTypeData& t, Progress* progress, int threads, Fn&& fn) {
  ParallelScanEdgeChunks(t, progress, threads, [&](int64_t b, int64_t end) {
    for (int64_t e = b; e < end; ++e) fn(e);
  });
}

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_EDGE_SCAN_H_
