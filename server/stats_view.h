#ifndef GRAPHSHARD_SERVER_STATS_VIEW_H_
#define GRAPHSHARD_SERVER_STATS_VIEW_H_

// graphshard-stats' lines (docs/SERVER.md, "Live view"): one per server per interval, as
// `key value` pairs after the server's name and address, so that scripts split them like the
// trainer's epoch line:
//   part 0 127.0.0.1:40417 streams 2 batches_per_s 35.0 build_p50_ms 12.4 build_p99_ms 41.0
//     out_mb_per_s 120.5 out_mb 1234.5 peer_mb_per_s 3.4 peer_mb 300.2 cache_hit 0.82
// Rates and latency quantiles are over the interval (two snapshots' difference; quantiles
// from the fixed-bucket histogram, Stats.batch_build); `n/a` where nothing happened to measure
// (no previous snapshot, no batch built, no cache lookup); `cache_hit` only with a cache.
// A server that did not answer gets `down: <reason>` instead. Pure functions, no I/O.

#include <string>

#include "absl/status/status.h"
#include "proto/graphshard.pb.h"

namespace graphshard::server {

struct StatsSnapshot {
  v1::Stats stats;
  double time_s = 0;  // when it was taken (any monotonic clock, seconds)
};

// The line of a server that answered `cur`; `prev` is its previous snapshot (null: none, or
// counters went back, i.e. another process at the address).
std::string StatsLine(const std::string& name, const std::string& address,
                      const StatsSnapshot* prev, const StatsSnapshot& cur);

// The line of a server that did not answer (`why`: the call's status) or is not registered
// (`address` empty).
std::string DownLine(const std::string& name, const std::string& address,
                     const absl::Status& why);

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_STATS_VIEW_H_
