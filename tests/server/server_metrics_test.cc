// The live view: the fixed-bucket latency histogram, graphshard-stats' lines, the
// Prometheus text, and a real server's Stats.batch_build and Metadata.metrics_port. The HTTP
// endpoint itself is scraped with a real HTTP client in tests/e2e/stats_live_view_test.sh.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "rpc/stats.h"
#include "server/latency_histogram.h"
#include "server/metrics_text.h"
#include "server/stats_view.h"
#include "tests/server/test_cluster.h"

namespace graphshard::server {
namespace {

TEST(HistogramQuantile, InterpolatesWithinTheBucketOfTheRank) {
  const std::vector<double> bounds = {1, 2, 5};
  // 10 observations in (1, 2], 10 in (2, 5].
  const std::vector<int64_t> counts = {0, 10, 10, 0};
  EXPECT_DOUBLE_EQ(HistogramQuantile(bounds, counts, 0.5), 2);     // rank 10: top of (1, 2]
  EXPECT_DOUBLE_EQ(HistogramQuantile(bounds, counts, 0.25), 1.5);  // rank 5: half of (1, 2]
  EXPECT_DOUBLE_EQ(HistogramQuantile(bounds, counts, 0.75), 3.5);  // rank 15: half of (2, 5]
  // Only the overflow bucket: the last bound (a lower bound on the truth).
  EXPECT_DOUBLE_EQ(HistogramQuantile(bounds, std::vector<int64_t>{0, 0, 0, 3}, 0.5), 5);
  EXPECT_EQ(HistogramQuantile(bounds, std::vector<int64_t>{0, 0, 0, 0}, 0.5), 0);
  EXPECT_EQ(HistogramQuantile(bounds, std::vector<int64_t>{1, 2}, 0.5), 0);  // sizes differ
}

TEST(LatencyHistogram, RecordsIntoTheBucketWhoseBoundIsNotBelow) {
  LatencyHistogram h;
  h.Record(0.05);  // (0, 0.1]
  h.Record(1.0);   // (0.5, 1]: a bound is inclusive
  h.Record(1.5);   // (1, 2]
  h.Record(1e6);   // above 60 s
  const LatencyHistogram::Snapshot s = h.Read();
  ASSERT_EQ(s.counts.size(), kLatencyBucketsMs.size() + 1);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.counts[0], 1);
  EXPECT_EQ(s.counts[3], 1);
  EXPECT_EQ(s.counts[4], 1);
  EXPECT_EQ(s.counts.back(), 1);
  EXPECT_NEAR(s.sum_ms, 0.05 + 1 + 1.5 + 1e6, 1e-3);
}

v1::Stats SomeStats(int64_t batches, int64_t bytes, std::vector<int64_t> build_counts) {
  v1::Stats s;
  s.set_active_streams(2);
  s.set_batches_built(batches);
  s.set_bytes_sent(bytes);
  s.set_peer_wire_bytes_sent(bytes / 10);
  v1::LatencyHistogram* h = s.mutable_batch_build();
  for (double b : kLatencyBucketsMs) h->add_upper_bounds_ms(b);
  build_counts.resize(kLatencyBucketsMs.size() + 1, 0);
  for (int64_t c : build_counts) {
    h->add_counts(c);
    h->set_count(h->count() + c);
  }
  return s;
}

TEST(StatsLine, RatesAndQuantilesAreOverTheInterval) {
  // Before: 10 batches at (0.5, 1] ms. Then 20 more, all in (10, 20] ms, in 2 s, 4 MB out.
  StatsSnapshot prev{SomeStats(10, 1000000, {0, 0, 0, 10}), 100};
  StatsSnapshot cur{SomeStats(30, 5000000, {0, 0, 0, 10, 0, 0, 0, 20}), 102};
  EXPECT_EQ(StatsLine("part 0", "h:1", &prev, cur),
            "part 0 h:1 streams 2 batches_per_s 10.0 build_p50_ms 15.0 build_p99_ms 19.9 "
            "out_mb_per_s 2.0 out_mb 5.0 peer_mb_per_s 0.2 peer_mb 0.5 peer_rounds_per_batch 0.00 "
            "rows_out_per_s 0 rows_out_mb 0.0");
  // 20 builds, 80 rounds: 4 per batch.
  cur.stats.set_peer_rounds(80);
  EXPECT_TRUE(absl::StrContains(StatsLine("part 0", "h:1", &prev, cur),
                                " peer_rounds_per_batch 4.00"));
  // Rows answered by GatherFeatures (peers, trainers' remote tiers): 3000 in 2 s, 1.5 MB total.
  prev.stats.set_gathered_rows(1000);
  cur.stats.set_gathered_rows(7000);
  cur.stats.set_gathered_row_bytes(1500000);
  EXPECT_TRUE(absl::StrContains(StatsLine("part 0", "h:1", &prev, cur),
                                " rows_out_per_s 3000 rows_out_mb 1.5"));
}

TEST(StatsLine, SaysNaWhereNothingWasMeasured) {
  StatsSnapshot cur{SomeStats(30, 5000000, {0, 0, 0, 30}), 102};
  // No previous snapshot: totals only.
  EXPECT_EQ(StatsLine("part 1", "h:2", nullptr, cur),
            "part 1 h:2 streams 2 batches_per_s n/a build_p50_ms n/a build_p99_ms n/a "
            "out_mb_per_s n/a out_mb 5.0 peer_mb_per_s n/a peer_mb 0.5 peer_rounds_per_batch n/a "
            "rows_out_per_s n/a rows_out_mb 0.0");
  // No batch in the interval: rate 0, no latency.
  StatsSnapshot same{cur.stats, 103};
  EXPECT_TRUE(absl::StrContains(StatsLine("part 1", "h:2", &cur, same),
                                "batches_per_s 0.0 build_p50_ms n/a build_p99_ms n/a"));
  // Counters that went back (another process at the address): no interval.
  StatsSnapshot restarted{SomeStats(1, 10, {1}), 104};
  EXPECT_TRUE(absl::StrContains(StatsLine("part 1", "h:2", &cur, restarted), "batches_per_s n/a"));
}

TEST(StatsLine, ShowsTheCacheHitRateOnlyWithACache) {
  StatsSnapshot prev{SomeStats(0, 0, {}), 1};
  StatsSnapshot cur{SomeStats(0, 0, {}), 2};
  EXPECT_FALSE(absl::StrContains(StatsLine("p", "a", &prev, cur), "cache_hit"));
  prev.stats.mutable_peer_cache()->set_hits(10);
  prev.stats.mutable_peer_cache()->set_misses(10);
  cur.stats.mutable_peer_cache()->set_hits(13);  // 3 hits, 1 miss in the interval
  cur.stats.mutable_peer_cache()->set_misses(11);
  EXPECT_TRUE(absl::EndsWith(StatsLine("p", "a", &prev, cur), " cache_hit 0.75"));
  EXPECT_TRUE(absl::EndsWith(StatsLine("p", "a", &cur, cur), " cache_hit n/a"));
}

TEST(DownLine, NamesServerAddressAndReason) {
  EXPECT_EQ(DownLine("part 1", "127.0.0.1:1", absl::UnavailableError("connection refused")),
            "part 1 127.0.0.1:1 down: UNAVAILABLE: connection refused");
  EXPECT_EQ(DownLine("part 2", "", absl::NotFoundError("not registered")),
            "part 2 - down: NOT_FOUND: not registered");
}

TEST(PrometheusText, HasCumulativeBucketsTypesAndEscapedLabels) {
  v1::Stats s = SomeStats(30, 5000000, {1, 0, 2, 0});
  s.mutable_batch_build()->set_sum_ms(2500);
  v1::RpcStats* rpc = s.add_rpcs();
  rpc->set_method("Odd\"Name\\");
  rpc->set_count(7);
  rpc->set_p50_ms(1.5);
  const std::string text = PrometheusText(s, {.part = 1, .replica = 2});
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  auto has = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  EXPECT_TRUE(has("# TYPE graphshard_batches_built_total counter")) << text;
  EXPECT_TRUE(has(R"(graphshard_batches_built_total{part="1",replica="2"} 30)")) << text;
  EXPECT_TRUE(has("# TYPE graphshard_batch_build_seconds histogram"));
  EXPECT_TRUE(has(R"(graphshard_batch_build_seconds_bucket{part="1",replica="2",le="0.0001"} 1)"))
      << text;
  EXPECT_TRUE(has(R"(graphshard_batch_build_seconds_bucket{part="1",replica="2",le="0.0005"} 3)"));
  EXPECT_TRUE(has(R"(graphshard_batch_build_seconds_bucket{part="1",replica="2",le="+Inf"} 3)"));
  EXPECT_TRUE(has(R"(graphshard_batch_build_seconds_count{part="1",replica="2"} 3)"));
  EXPECT_TRUE(has(R"(graphshard_batch_build_seconds_sum{part="1",replica="2"} 2.5)"));
  EXPECT_TRUE(has(R"(graphshard_rpc_calls_total{part="1",replica="2",method="Odd\"Name\\"} 7)"))
      << text;
  EXPECT_TRUE(has(
      R"(graphshard_rpc_latency_seconds{part="1",replica="2",method="Odd\"Name\\",quantile="0.5"} 0.0015)"));
  EXPECT_FALSE(absl::StrContains(text, "peer_cache"));  // no cache
  s.mutable_peer_cache()->set_hits(4);
  EXPECT_TRUE(absl::StrContains(PrometheusText(s, {}),
                                "\ngraphshard_peer_cache_hits_total{part=\"0\",replica=\"0\"} 4\n"));
  // Every sample line is NAME{LABELS} VALUE, and every family is declared before its samples.
  for (const std::string& line : lines) {
    if (line[0] == '#') continue;
    EXPECT_TRUE(absl::StartsWith(line, "graphshard_")) << line;
    EXPECT_TRUE(absl::StrContains(line, "} ")) << line;
  }
}

// One [5, 5] minibatch on part 0 of the first `num_seeds` seeds of `split`.
void SampleOnPartZero(testing::TestCluster& cluster, const std::string& split_name,
                      size_t num_seeds) {
  v1::GetSplitRequest split_request;
  split_request.set_split(split_name);
  v1::GetSplitResponse split;
  ASSERT_TRUE(cluster.Stub(0)->GetSplit(testing::Context().get(), split_request, &split).ok());
  ASSERT_GE(split.ids().size(), 8 * num_seeds);
  v1::SampleMinibatchRequest request;
  request.set_seeds(split.ids().substr(0, 8 * num_seeds));
  request.mutable_sampling()->add_fanouts(5);
  request.mutable_sampling()->add_fanouts(5);
  v1::Minibatch batch;
  ASSERT_TRUE(cluster.Stub(0)->SampleMinibatch(testing::Context().get(), request, &batch).ok());
}

// A real server: batches it builds land in Stats.batch_build (fetched through the tools' one
// client, rpc::FetchStats), and the endpoint's port is published in GetMetadata.
TEST(ServerMetrics, BuildLatencyIsRecordedAndMetricsPortPublished) {
  testing::TestCluster cluster(testing::ReadCora(), 2, {}, {}, PeerFeatures::kLocal,
                               PeerSampling::kLocal, [](ServerOptions& o) {
                                 o.metrics_listen = "127.0.0.1:0";
                               });
  for (int p = 0; p < 2; ++p) {
    EXPECT_GT(cluster.server(p).metrics_port(), 0);
    v1::Metadata meta;
    ASSERT_TRUE(cluster.Stub(p)->GetMetadata(testing::Context().get(), {}, &meta).ok());
    EXPECT_EQ(meta.metrics_port(), cluster.server(p).metrics_port());
  }
  auto channel = rpc::MakeChannel(cluster.server(0).address());
  absl::StatusOr<v1::Stats> before = rpc::FetchStats(channel, absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_NO_FATAL_FAILURE(SampleOnPartZero(cluster, "train", 16));
  absl::StatusOr<v1::Stats> after = rpc::FetchStats(channel, absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->batch_build().count(), before->batch_build().count() + 1);
  EXPECT_GT(after->batch_build().p50_ms(), 0);
  EXPECT_EQ(after->batch_build().upper_bounds_ms_size() + 1, after->batch_build().counts_size());
  // A dead address: the call ends by its deadline with an error, it does not hang.
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::Stats> dead =
      rpc::FetchStats(rpc::MakeChannel("127.0.0.1:1"), absl::Now() + absl::Seconds(2));
  EXPECT_FALSE(dead.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// Round trips per batch: a 2-hop batch of part 0's seeds samples their
// in-edges at home (an edge is stored with its destination's part), then needs the other part
// for the second hop and for the feature gather: 2 rounds of 1 request each, over RPC; with the
// other part read in-process (same host, --peer-sampling local, --peer-features local) none.
TEST(ServerMetrics, CountsRoundTripsToOtherPartsPerBatch) {
  for (const bool over_rpc : {true, false}) {
    SCOPED_TRACE(over_rpc ? "peers over RPC" : "peers read in-process");
    testing::TestCluster cluster(testing::ReadCora(), 2, {}, {},
                                 over_rpc ? PeerFeatures::kRpc : PeerFeatures::kLocal,
                                 over_rpc ? PeerSampling::kRpc : PeerSampling::kLocal);
    auto channel = rpc::MakeChannel(cluster.server(0).address());
    absl::StatusOr<v1::Stats> before = rpc::FetchStats(channel, absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(before.ok()) << before.status();
    // 128 seeds: both parts at every hop.
    ASSERT_NO_FATAL_FAILURE(SampleOnPartZero(cluster, "test", 128));
    absl::StatusOr<v1::Stats> after = rpc::FetchStats(channel, absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_EQ(after->peer_rounds() - before->peer_rounds(), over_rpc ? 2 : 0);
    EXPECT_EQ(after->peer_requests() - before->peer_requests(), over_rpc ? 2 : 0);
    EXPECT_TRUE(absl::StrContains(PrometheusText(*after, {}), "graphshard_peer_rounds_total"));
  }
}

}  // namespace
}  // namespace graphshard::server
