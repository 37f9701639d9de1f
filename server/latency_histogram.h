#ifndef GRAPHSHARD_SERVER_LATENCY_HISTOGRAM_H_
#define GRAPHSHARD_SERVER_LATENCY_HISTOGRAM_H_

// Latencies in fixed buckets (Stats.batch_build, the Prometheus histogram): recording is a few
// relaxed atomic adds (no lock on the batch-building threads), memory is fixed, and two
// snapshots subtract to the latencies of the interval between them, which is how graphshard-stats
// shows the last second's p50/p99. The price is resolution: a quantile is interpolated within a
// 1-2-5 bucket (e.g. somewhere in (20, 50] ms), so it is exact only to the bucket.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace graphshard::server {

// Upper bounds (ms) of the finite buckets: 1-2-5 steps from 0.1 ms to 60 s; the last bucket
// holds everything above.
inline constexpr std::array<double, 18> kLatencyBucketsMs = {
    0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 60000};

// The q-quantile (0 <= q <= 1) of a histogram over `upper_bounds` with `counts` per bucket
// (counts.size() == upper_bounds.size() + 1, the last above every bound): found by rank, then
// linear within its bucket (from the previous bound, 0 for the first); a rank in the overflow
// bucket reads as the last bound. 0 when the counts are all 0 or the sizes do not match.
inline double HistogramQuantile(absl::Span<const double> upper_bounds,
                                absl::Span<const int64_t> counts, double q) {
  if (counts.size() != upper_bounds.size() + 1 || upper_bounds.empty()) return 0;
  int64_t total = 0;
  for (int64_t c : counts) total += c > 0 ? c : 0;
  if (total == 0) return 0;
  const double rank = q * static_cast<double>(total);
  double below = 0;  // observations in the buckets before this one
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    const double c = counts[i] > 0 ? static_cast<double>(counts[i]) : 0;
    if (c > 0 && below + c >= rank) {
      const double lo = i == 0 ? 0 : upper_bounds[i - 1];
      return lo + (upper_bounds[i] - lo) * std::max(0.0, rank - below) / c;
    }
    below += c;
  }
  return upper_bounds.back();
}

// Thread-safe: Record from any thread; Read sees each bucket's count atomically (not the whole
// histogram at one instant: a snapshot may be one observation out between count and sum).
class LatencyHistogram {
 public:
  struct Snapshot {
    std::vector<int64_t> counts;  // kLatencyBucketsMs.size() + 1
    int64_t count = 0;
    double sum_ms = 0;
  };

  void Record(double ms) {
    size_t i = 0;
    while (i < kLatencyBucketsMs.size() && ms > kLatencyBucketsMs[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_us_.fetch_add(static_cast<int64_t>(ms * 1000), std::memory_order_relaxed);
  }

  Snapshot Read() const {
    Snapshot s;
    s.counts.reserve(counts_.size());
    for (const std::atomic<int64_t>& c : counts_) {
      s.counts.push_back(c.load(std::memory_order_relaxed));
      s.count += s.counts.back();
    }
    s.sum_ms = static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1000;
    return s;
  }

 private:
  std::array<std::atomic<int64_t>, kLatencyBucketsMs.size() + 1> counts_{};
  std::atomic<int64_t> sum_us_{0};
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_LATENCY_HISTOGRAM_H_
