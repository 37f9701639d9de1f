#include "server/stats_view.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/latency_histogram.h"

namespace graphshard::server {
namespace {

constexpr double kMb = 1e6;  // decimal MB, as network rates are usually read

int64_t PeerBytes(const v1::Stats& s) {
  return s.peer_wire_bytes_sent() + s.peer_wire_bytes_received() + s.peer_shm_bytes_received();
}

std::string Fixed(double v, int digits) { return absl::StrFormat("%.*f", digits, v); }

// p-quantile of the batches built between the snapshots, "n/a" when none was.
std::string IntervalQuantile(const v1::LatencyHistogram& prev, const v1::LatencyHistogram& cur,
                             double q) {
  if (prev.counts_size() != cur.counts_size() ||
      prev.upper_bounds_ms_size() != cur.upper_bounds_ms_size()) {
    return "n/a";
  }
  std::vector<int64_t> delta(static_cast<size_t>(cur.counts_size()));
  int64_t total = 0;
  for (int i = 0; i < cur.counts_size(); ++i) {
    delta[static_cast<size_t>(i)] = cur.counts(i) - prev.counts(i);
    total += delta[static_cast<size_t>(i)];
  }
  if (total <= 0) return "n/a";
  return Fixed(HistogramQuantile(cur.upper_bounds_ms(), delta, q), 1);
}

}  // namespace

std::string StatsLine(const std::string& name, const std::string& address,
                      const StatsSnapshot* prev, const StatsSnapshot& cur) {
  const v1::Stats& c = cur.stats;
  // Counters that went back belong to another process: no interval to speak of.
  if (prev != nullptr && (prev->stats.batches_built() > c.batches_built() ||
                          prev->stats.bytes_sent() > c.bytes_sent() ||
                          prev->time_s >= cur.time_s)) {
    prev = nullptr;
  }
  const double dt = prev != nullptr ? cur.time_s - prev->time_s : 0;
  auto rate = [&](int64_t now, int64_t before, double unit, int digits) {
    return prev != nullptr ? Fixed(static_cast<double>(now - before) / unit / dt, digits)
                           : std::string("n/a");
  };
  const v1::Stats empty;
  const v1::Stats& p = prev != nullptr ? prev->stats : empty;
  std::string line = absl::StrCat(name, " ", address, " streams ", c.active_streams());
  absl::StrAppend(&line, " batches_per_s ", rate(c.batches_built(), p.batches_built(), 1, 1));
  absl::StrAppend(&line, " build_p50_ms ",
                  prev != nullptr ? IntervalQuantile(p.batch_build(), c.batch_build(), 0.5)
                                  : "n/a");
  absl::StrAppend(&line, " build_p99_ms ",
                  prev != nullptr ? IntervalQuantile(p.batch_build(), c.batch_build(), 0.99)
                                  : "n/a");
  absl::StrAppend(&line, " out_mb_per_s ", rate(c.bytes_sent(), p.bytes_sent(), kMb, 1),
                  " out_mb ", Fixed(static_cast<double>(c.bytes_sent()) / kMb, 1));
  absl::StrAppend(&line, " peer_mb_per_s ", rate(PeerBytes(c), PeerBytes(p), kMb, 1),
                  " peer_mb ", Fixed(static_cast<double>(PeerBytes(c)) / kMb, 1));
  const int64_t built = c.batch_build().count() - p.batch_build().count();
  absl::StrAppend(&line, " peer_rounds_per_batch ",
                  prev != nullptr && built > 0
                      ? Fixed(static_cast<double>(c.peer_rounds() - p.peer_rounds()) /
                                  static_cast<double>(built),
                              2)
                      : std::string("n/a"));
  absl::StrAppend(&line, " rows_out_per_s ",
                  rate(c.gathered_rows(), p.gathered_rows(), 1, 0), " rows_out_mb ",
                  Fixed(static_cast<double>(c.gathered_row_bytes()) / kMb, 1));
  if (c.has_peer_cache()) {
    const int64_t hits = c.peer_cache().hits() - p.peer_cache().hits();
    const int64_t lookups = hits + c.peer_cache().misses() - p.peer_cache().misses();
    absl::StrAppend(&line, " cache_hit ",
                    prev != nullptr && lookups > 0
                        ? Fixed(static_cast<double>(hits) / static_cast<double>(lookups), 2)
                        : std::string("n/a"));
  }
  return line;
}

std::string DownLine(const std::string& name, const std::string& address,
                     const absl::Status& why) {
  return absl::StrCat(name, " ", address.empty() ? "-" : address, " down: ",
                      absl::StatusCodeToString(why.code()), ": ", why.message());
}

}  // namespace graphshard::server
