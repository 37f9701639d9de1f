#include "server/metrics_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace graphshard::server {
namespace {

// Prometheus reads Go's float syntax: the shortest form that round-trips, without an exponent
// in the usual range ("0.0001" rather than "1e-04", as other exporters write bucket bounds),
// "+Inf" for the overflow bucket's bound.
std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  const double a = std::fabs(v);
  const bool fixed = a == 0 || (a >= 1e-6 && a < 1e15);
  char buf[64];
  const std::to_chars_result r =
      fixed ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
            : std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

class Writer {
 public:
  explicit Writer(const MetricsLabels& labels)
      : base_(absl::StrCat("part=\"", labels.part, "\",replica=\"", labels.replica, "\"")) {}

  void Family(const char* name, const char* type, const char* help) {
    absl::StrAppend(&out_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  }
  // One sample; `extra` are further labels ("method=\"X\"") or empty.
  void Sample(const std::string& name, double value, const std::string& extra = "") {
    absl::StrAppend(&out_, name, "{", base_, extra.empty() ? "" : ",", extra, "} ", Number(value),
                    "\n");
  }
  void Metric(const char* name, const char* type, const char* help, double value) {
    Family(name, type, help);
    Sample(name, value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string base_;
  std::string out_;
};

void BatchBuild(const v1::LatencyHistogram& h, Writer& w) {
  constexpr char kName[] = "graphshard_batch_build_seconds";
  w.Family(kName, "histogram",
           "Wall time building one batch (sample, gather, pack), fixed buckets.");
  // Prometheus buckets are cumulative: count of observations <= le.
  int64_t cumulative = 0;
  for (int i = 0; i < h.counts_size(); ++i) {
    cumulative += h.counts(i);
    const double le = i < h.upper_bounds_ms_size() ? h.upper_bounds_ms(i) / 1000 : INFINITY;
    w.Sample(absl::StrCat(kName, "_bucket"), static_cast<double>(cumulative),
             absl::StrCat("le=\"", Number(le), "\""));
  }
  w.Sample(absl::StrCat(kName, "_sum"), h.sum_ms() / 1000);
  w.Sample(absl::StrCat(kName, "_count"), static_cast<double>(h.count()));
}

void PeerCache(const v1::PeerCacheStats& c, Writer& w) {
  w.Metric("graphshard_peer_cache_capacity_bytes", "gauge", "Peer cache capacity.",
           static_cast<double>(c.capacity_bytes()));
  w.Metric("graphshard_peer_cache_bytes", "gauge", "Memory the cached rows take.",
           static_cast<double>(c.bytes()));
  w.Metric("graphshard_peer_cache_rows", "gauge", "Remote feature rows held.",
           static_cast<double>(c.rows()));
  w.Metric("graphshard_peer_cache_parts_pending", "gauge", "Parts still to fill.",
           static_cast<double>(c.parts_pending()));
  w.Metric("graphshard_peer_cache_hits_total", "counter",
           "Rows asked of a peer and served from the cache.", static_cast<double>(c.hits()));
  w.Metric("graphshard_peer_cache_misses_total", "counter",
           "Rows asked of a peer and fetched from it.", static_cast<double>(c.misses()));
  w.Metric("graphshard_peer_cache_hit_rate", "gauge", "hits / (hits + misses) since start.",
           c.hit_rate());
  w.Metric("graphshard_peer_cache_bytes_saved_total", "counter",
           "Feature and label bytes the hits did not fetch.",
           static_cast<double>(c.bytes_saved()));
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '"') {
      out += "\\\"";
    } else if (ch == '\n') {
      out += "\\n";
    } else {
      out += ch;
    }
  }
  return out;
}

std::string PrometheusText(const v1::Stats& s, const MetricsLabels& labels) {
  Writer w(labels);
  auto d = [](int64_t v) { return static_cast<double>(v); };
  w.Metric("graphshard_active_streams", "gauge", "Batch streams open now.",
           d(s.active_streams()));
  w.Metric("graphshard_batches_built_total", "counter", "Minibatches built and sent.",
           d(s.batches_built()));
  w.Metric("graphshard_sampled_edges_total", "counter", "Edges sampled into minibatches.",
           d(s.sampled_edges()));
  w.Metric("graphshard_bytes_sent_total", "counter",
           "Payload bytes of minibatches and peer answers sent.", d(s.bytes_sent()));
  w.Metric("graphshard_shm_bytes_total", "counter", "Of which through shared memory.",
           d(s.shm_bytes()));
  w.Metric("graphshard_shm_ring_stalls_total", "counter",
           "Ring writes that waited the whole second for the client.", d(s.shm_ring_stalls()));
  w.Metric("graphshard_peer_wire_bytes_sent_total", "counter",
           "Bytes of requests this server sent to peers.", d(s.peer_wire_bytes_sent()));
  w.Metric("graphshard_peer_wire_bytes_received_total", "counter",
           "Bytes of peer answers received over a connection.", d(s.peer_wire_bytes_received()));
  w.Metric("graphshard_peer_shm_bytes_received_total", "counter",
           "Bytes of peer answers received through shared memory.",
           d(s.peer_shm_bytes_received()));
  w.Metric("graphshard_peer_rounds_total", "counter",
           "Waits for other parts' servers while building batches (a hop, the gather).",
           d(s.peer_rounds()));
  w.Metric("graphshard_peer_requests_total", "counter",
           "Requests to other parts' servers while building batches.", d(s.peer_requests()));
  BatchBuild(s.batch_build(), w);
  w.Family("graphshard_stream_build_wall_seconds_total", "counter",
           "Wall time of building streamed batches, per phase.");
  for (const v1::BuildPhaseStats& p : s.stream_build()) {
    w.Sample("graphshard_stream_build_wall_seconds_total", p.wall_s(),
             absl::StrCat("phase=\"", EscapeLabelValue(p.phase()), "\""));
  }
  w.Family("graphshard_rpc_calls_total", "counter", "Calls answered, per method.");
  for (const v1::RpcStats& r : s.rpcs()) {
    w.Sample("graphshard_rpc_calls_total", d(r.count()),
             absl::StrCat("method=\"", EscapeLabelValue(r.method()), "\""));
  }
  w.Family("graphshard_rpc_errors_total", "counter", "Calls answered with an error, per method.");
  for (const v1::RpcStats& r : s.rpcs()) {
    w.Sample("graphshard_rpc_errors_total", d(r.errors()),
             absl::StrCat("method=\"", EscapeLabelValue(r.method()), "\""));
  }
  w.Family("graphshard_rpc_latency_seconds", "gauge",
           "Call latency quantiles over the method's last 4096 calls.");
  for (const v1::RpcStats& r : s.rpcs()) {
    const std::string method = absl::StrCat("method=\"", EscapeLabelValue(r.method()), "\"");
    w.Sample("graphshard_rpc_latency_seconds", r.p50_ms() / 1000,
             absl::StrCat(method, ",quantile=\"0.5\""));
    w.Sample("graphshard_rpc_latency_seconds", r.p99_ms() / 1000,
             absl::StrCat(method, ",quantile=\"0.99\""));
  }
  if (s.has_peer_cache()) PeerCache(s.peer_cache(), w);
  return w.Take();
}

}  // namespace graphshard::server
