#ifndef GRAPHSHARD_SERVER_METRICS_TEXT_H_
#define GRAPHSHARD_SERVER_METRICS_TEXT_H_

// A server's Stats in the Prometheus text exposition format (version 0.0.4), what
// `--metrics-listen` serves on GET /metrics: the same numbers as the Stats RPC, so a scrape and
// graphshard-stats never disagree. Names start with `graphshard_`; counters end in `_total`,
// times are in seconds (Prometheus' base unit). docs/SERVER.md ("Live view") lists them.

#include <string>

#include "proto/graphshard.pb.h"

namespace graphshard::server {

struct MetricsLabels {
  int part = 0;
  int replica = 0;
};

// Every metric of `stats`, one `# HELP` and `# TYPE` line per family. The peer cache's metrics
// appear only when the server has a cache (Stats.peer_cache set).
std::string PrometheusText(const v1::Stats& stats, const MetricsLabels& labels);

// `value` escaped for a label value (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& value);

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_METRICS_TEXT_H_
