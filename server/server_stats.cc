#include "server/server_stats.h"

#include <algorithm>

namespace graphshard::server {
namespace {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

void ServerStats::RecordCall(const std::string& method, absl::Duration latency, bool ok) {
  absl::MutexLock lock(&mu_);
  Method& m = methods_[method];
  ++m.count;
  if (!ok) ++m.errors;
  double ms = absl::ToDoubleMilliseconds(latency);
  if (m.recent_ms.size() < kWindow) {
    m.recent_ms.push_back(ms);
  } else {
    m.recent_ms[m.next] = ms;
    m.next = (m.next + 1) % kWindow;
  }
}

void ServerStats::AddBuildProfile(const engine::BuildProfile& profile) {
  batch_build_.Record(
      (profile.sample.wall_s + profile.gather.wall_s + profile.finish.wall_s) * 1000);
  absl::MutexLock lock(&mu_);
  build_.sample += profile.sample;
  build_.gather += profile.gather;
  build_.finish += profile.finish;
  build_.peer_rounds += profile.peer_rounds;
  build_.peer_requests += profile.peer_requests;
}

void ServerStats::RecordBatchBuild(const engine::BuildProfile& profile) {
  batch_build_.Record((profile.sample.wall_s + profile.gather.wall_s) * 1000);
  absl::MutexLock lock(&mu_);
  build_.peer_rounds += profile.peer_rounds;
  build_.peer_requests += profile.peer_requests;
}

void ServerStats::AddWriterTimes(double wait_build_s, double wait_ring_s, double write_s) {
  absl::MutexLock lock(&mu_);
  wait_build_s_ += wait_build_s;
  wait_ring_s_ += wait_ring_s;
  write_s_ += write_s;
}

int64_t ServerStats::active_streams() {
  absl::MutexLock lock(&mu_);
  return active_streams_;
}

void ServerStats::Fill(v1::Stats* out) {
  absl::MutexLock lock(&mu_);
  for (const auto& [name, m] : methods_) {
    v1::RpcStats* r = out->add_rpcs();
    r->set_method(name);
    r->set_count(m.count);
    r->set_errors(m.errors);
    r->set_p50_ms(Percentile(m.recent_ms, 0.5));
    r->set_p99_ms(Percentile(m.recent_ms, 0.99));
  }
  out->set_sampled_edges(sampled_edges_);
  out->set_batches_built(batches_built_);
  out->set_peer_rounds(build_.peer_rounds);
  out->set_peer_requests(build_.peer_requests);
  out->set_bytes_sent(bytes_sent_);
  out->set_gathered_rows(gathered_rows_);
  out->set_gathered_row_bytes(gathered_row_bytes_);
  out->set_shm_bytes(shm_bytes_);
  out->set_shm_segments_created(shm_created_);
  out->set_shm_segments_reused(shm_reused_);
  out->set_shm_ring_stalls(shm_ring_stalls_);
  out->set_active_streams(active_streams_);
  out->set_streams_reclaimed(streams_reclaimed_);
  for (const auto& [name, u] : {std::pair{"sample", &build_.sample},
                                std::pair{"gather", &build_.gather},
                                std::pair{"finish", &build_.finish}}) {
    v1::BuildPhaseStats* p = out->add_stream_build();
    p->set_phase(name);
    p->set_wall_s(u->wall_s);
    p->set_user_s(u->user_s);
    p->set_sys_s(u->sys_s);
    p->set_minor_faults(u->minor_faults);
  }
  out->set_stream_wait_build_s(wait_build_s_);
  out->set_stream_wait_ring_s(wait_ring_s_);
  out->set_stream_write_s(write_s_);
  const LatencyHistogram::Snapshot build = batch_build_.Read();
  v1::LatencyHistogram* h = out->mutable_batch_build();
  h->mutable_upper_bounds_ms()->Add(kLatencyBucketsMs.begin(), kLatencyBucketsMs.end());
  h->mutable_counts()->Add(build.counts.begin(), build.counts.end());
  h->set_count(build.count);
  h->set_sum_ms(build.sum_ms);
  h->set_p50_ms(HistogramQuantile(kLatencyBucketsMs, build.counts, 0.5));
  h->set_p99_ms(HistogramQuantile(kLatencyBucketsMs, build.counts, 0.99));
  out->set_peer_wire_bytes_sent(peer_traffic_->sent());
  out->set_peer_wire_bytes_received(peer_traffic_->received());
  out->set_peer_shm_bytes_received(peer_traffic_->shm_received());
  if (cache_ != nullptr && cache_->counters().capacity_bytes > 0) {
    const engine::PeerCacheCounters c = cache_->counters();
    v1::PeerCacheStats* p = out->mutable_peer_cache();
    p->set_capacity_bytes(c.capacity_bytes);
    p->set_rows(c.rows);
    p->set_bytes(c.bytes);
    p->set_parts_filled(c.parts_filled);
    p->set_parts_pending(c.parts_pending);
    p->set_hits(c.hits);
    p->set_misses(c.misses);
    p->set_hit_rate(c.hits + c.misses > 0
                        ? static_cast<double>(c.hits) / static_cast<double>(c.hits + c.misses)
                        : 0.0);
    p->set_bytes_saved(c.bytes_saved);
    p->set_fill_bytes(c.fill_bytes);
    p->set_store_dtype(static_cast<v1::FeatureDtype>(c.store_dtype));
  }
}

}  // namespace graphshard::server
