// Fewer bytes between parts, on real in-process servers (port 0): the cache of hot remote rows
// and isolated peers change where bytes come from, never the batches; a 16-bit peer dtype rounds
// the remote rows and nothing else; Stats count the peer bytes on the wire and the cache's hits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "common/half.h"
#include "partitioner/generate.h"
#include "server/proto_convert.h"
#include "tests/server/test_cluster.h"

namespace graphshard::server {
namespace {

using testing::Context;
using testing::TestCluster;

v1::Stats StatsOf(v1::PartitionService::Stub& stub) {
  v1::Stats stats;
  EXPECT_TRUE(stub.GetStats(Context().get(), {}, &stats).ok());
  return stats;
}

// Until every server's cache has filled every part it chose rows of (20 s at most).
void WaitForCaches(TestCluster& cluster, int parts) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  for (int p = 0; p < parts; ++p) {
    auto stub = cluster.Stub(p);
    while (true) {
      v1::Stats s = StatsOf(*stub);
      ASSERT_TRUE(s.has_peer_cache()) << "part " << p << " has no cache";
      if (s.peer_cache().parts_pending() == 0 && s.peer_cache().parts_filled() > 0) break;
      ASSERT_LT(absl::Now(), deadline) << "part " << p << "'s cache did not fill";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

std::vector<int64_t> Split(v1::PartitionService::Stub& stub) {
  v1::GetSplitRequest req;
  req.set_split("train");
  v1::GetSplitResponse resp;
  EXPECT_TRUE(stub.GetSplit(Context().get(), req, &resp).ok());
  return *FromBytes<int64_t>(resp.ids(), "ids");
}

// Every batch of an epoch over the part's training seeds, inline, serialized (equal strings =
// bitwise-equal batches).
std::vector<std::string> Epoch(TestCluster& cluster, int part, const v1::SamplingConfig& sampling) {
  auto stub = cluster.Stub(part);
  v1::StreamBatchesRequest r;
  r.set_seeds(ToBytes<int64_t>(Split(*stub)));
  r.set_batch_size(40);
  r.set_shuffle(true);
  r.set_shuffle_seed(3);
  *r.mutable_sampling() = sampling;
  auto ctx = Context();
  auto reader = stub->StreamBatches(ctx.get(), r);
  std::vector<std::string> out;
  v1::Minibatch m;
  while (reader->Read(&m)) out.push_back(m.SerializeAsString());
  grpc::Status s = reader->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();
  return out;
}

std::vector<v1::SamplingConfig> Configs() {
  std::vector<v1::SamplingConfig> configs(3);
  for (int f : {5, 3}) configs[0].add_fanouts(f);
  for (int f : {-1, 2}) configs[1].add_fanouts(f);
  configs[1].set_feature_dtype(v1::FLOAT16);
  for (int f : {4, 4}) configs[2].add_fanouts(f);
  configs[2].set_disjoint(true);
  configs[2].set_feature_dtype(v1::BFLOAT16);
  return configs;
}

partitioner::Graph Products() {
  partitioner::GenerateOptions g;
  g.seed = 9;
  g.num_nodes = 1500;
  g.avg_degree = 8;
  g.num_features = 64;  // feature rows dominate the peer bytes
  g.num_classes = 5;
  auto graph = partitioner::Generate(g);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

partitioner::Graph Mag() {
  partitioner::GenerateOptions g;
  g.kind = "mag";
  g.seed = 4;
  g.num_nodes = 400;
  g.num_features = 8;
  g.num_classes = 4;
  auto graph = partitioner::GenerateMag(g);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

std::function<void(ServerOptions&)> Isolated(int64_t cache_bytes,
                                             engine::FeatureDtype dtype = engine::FeatureDtype::kFloat32) {
  return [=](ServerOptions& so) {
    so.isolated_peers = true;
    so.peer_cache_bytes = cache_bytes;
    so.peer_dtype = dtype;
  };
}

// The same graph, the same parts (random, seed 7), peers isolated; without a cache, with one
// that holds some of the hot rows, and with one that holds them all.
void ExpectCacheChangesNoBatch(const partitioner::Graph& graph, int64_t some_bytes) {
  const int parts = 2;
  TestCluster off(graph, parts, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc, Isolated(0));
  TestCluster some(graph, parts, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc,
                   Isolated(some_bytes));
  TestCluster all(graph, parts, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc,
                  Isolated(int64_t{64} << 20));
  WaitForCaches(some, parts);
  WaitForCaches(all, parts);
  for (int p = 0; p < parts; ++p) {
    for (const v1::SamplingConfig& config : Configs()) {
      std::vector<std::string> want = Epoch(off, p, config);
      ASSERT_FALSE(want.empty());
      for (TestCluster* cached : {&some, &all}) {
        std::vector<std::string> got = Epoch(*cached, p, config);
        ASSERT_EQ(got.size(), want.size());
        for (size_t b = 0; b < got.size(); ++b) {
          EXPECT_TRUE(got[b] == want[b]) << "part " << p << " batch " << b << " differs";
        }
      }
    }
    EXPECT_FALSE(StatsOf(*off.Stub(p)).has_peer_cache());
    const v1::PeerCacheStats s = StatsOf(*some.Stub(p)).peer_cache();
    const v1::PeerCacheStats a = StatsOf(*all.Stub(p)).peer_cache();
    EXPECT_GT(s.hits(), 0) << p;
    EXPECT_GT(s.misses(), 0) << p;
    EXPECT_LE(s.bytes(), some_bytes) << p;
    EXPECT_GT(a.rows(), s.rows()) << p;
    EXPECT_GT(a.hit_rate(), s.hit_rate()) << p;
    EXPECT_GT(s.bytes_saved(), 0) << p;
    // Fewer feature bytes crossed with the cache (its fill counted in).
    const v1::Stats off_stats = StatsOf(*off.Stub(p)), all_stats = StatsOf(*all.Stub(p));
    EXPECT_LT(all_stats.peer_wire_bytes_received(), off_stats.peer_wire_bytes_received()) << p;
  }
}

TEST(PeerCacheTest, BatchesAreTheSameWithTheCacheOnAndOffHomogeneous) {
  ExpectCacheChangesNoBatch(Products(), 16 << 10);
}

TEST(PeerCacheTest, BatchesAreTheSameWithTheCacheOnAndOffHeterogeneous) {
  ExpectCacheChangesNoBatch(Mag(), 8 << 10);
}

// No part read from another's files, no shared-memory answers: the same batches as peers read
// in-process, with the peer bytes on the wire counted.
TEST(PeerCacheTest, IsolatedPeersGiveTheSameBatchesOverTheWire) {
  const partitioner::Graph graph = Products();
  TestCluster local(graph, 2, {}, {}, PeerFeatures::kLocal, PeerSampling::kLocal);
  TestCluster rpc(graph, 2, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc);
  TestCluster isolated(graph, 2, {}, {}, PeerFeatures::kLocal, PeerSampling::kLocal, Isolated(0));
  for (int p = 0; p < 2; ++p) {
    for (const v1::SamplingConfig& config : Configs()) {
      std::vector<std::string> want = Epoch(local, p, config);
      std::vector<std::string> got = Epoch(isolated, p, config);
      ASSERT_FALSE(want.empty());
      ASSERT_EQ(got.size(), want.size());
      for (size_t b = 0; b < got.size(); ++b) {
        EXPECT_TRUE(got[b] == want[b]) << "part " << p << " batch " << b << " differs";
      }
      Epoch(rpc, p, config);
    }
    const v1::Stats l = StatsOf(*local.Stub(p)), r = StatsOf(*rpc.Stub(p)),
                    i = StatsOf(*isolated.Stub(p));
    EXPECT_EQ(l.peer_wire_bytes_sent() + l.peer_wire_bytes_received(), 0) << "read in-process";
    // Same-host rpc peers answer feature rows through shared memory...
    EXPECT_GT(r.peer_shm_bytes_received(), 0) << p;
    // ...isolated ones never: every row and hop crossed the connection.
    EXPECT_EQ(i.peer_shm_bytes_received(), 0) << p;
    EXPECT_GT(i.peer_wire_bytes_sent(), 0) << p;
    EXPECT_GT(i.peer_wire_bytes_received(), r.peer_wire_bytes_received()) << p;
  }
}

// --peer-dtype float16: float32 batches whose remote rows are the float32 rows rounded to half
// (local rows exact), cache or not; the rows crossed in half the bytes.
TEST(PeerCacheTest, Float16PeerDtypeRoundsOnlyRemoteRowsToHalf) {
  const partitioner::Graph graph = Products();
  TestCluster exact(graph, 2, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc, Isolated(0));
  TestCluster half(graph, 2, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc,
                   Isolated(0, engine::FeatureDtype::kFloat16));
  TestCluster half_cached(graph, 2, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc,
                          Isolated(int64_t{64} << 20, engine::FeatureDtype::kFloat16));
  WaitForCaches(half_cached, 2);
  v1::Metadata meta;
  ASSERT_TRUE(exact.Stub(0)->GetMetadata(Context().get(), {}, &meta).ok());
  const auto& offsets = meta.node_types(0).part_offsets();
  v1::SamplingConfig config;
  for (int f : {5, 3}) config.add_fanouts(f);
  for (int p = 0; p < 2; ++p) {
    std::vector<std::string> want = Epoch(exact, p, config);
    std::vector<std::string> got = Epoch(half, p, config);
    EXPECT_EQ(Epoch(half_cached, p, config), got) << "the cache changed float16-wire batches";
    ASSERT_EQ(got.size(), want.size());
    int64_t remote_values = 0, changed = 0;
    for (size_t b = 0; b < got.size(); ++b) {
      v1::Minibatch mw, mg;
      ASSERT_TRUE(mw.ParseFromString(want[b]) && mg.ParseFromString(got[b]));
      testing::Decoded w = testing::Decode(mw), g = testing::Decode(mg);
      const testing::DecodedBlock &bw = w.nodes.at("node"), &bg = g.nodes.at("node");
      ASSERT_EQ(bw.ids, bg.ids);
      EXPECT_EQ(bw.labels, bg.labels);
      const std::vector<float> fw = w.Features("node"), fg = g.Features("node");
      ASSERT_EQ(fw.size(), fg.size());
      const size_t dim = fw.size() / bw.ids.size();
      for (size_t j = 0; j < bw.ids.size(); ++j) {
        const bool own = bw.ids[j] >= offsets[p] && bw.ids[j] < offsets[p + 1];
        for (size_t d = 0; d < dim; ++d) {
          const float x = fw[j * dim + d], y = fg[j * dim + d];
          if (own) {
            ASSERT_EQ(x, y) << "an own row was rounded";
            continue;
          }
          ++remote_values;
          ASSERT_EQ(y, common::HalfToFloat(common::FloatToHalf(x)));
          ASSERT_LE(std::fabs(y - x), std::max(std::fabs(x) * 0x1p-11f, 0x1p-25f));
          changed += x != y ? 1 : 0;
        }
      }
    }
    EXPECT_GT(remote_values, 0);
    EXPECT_GT(changed, 0);
    const v1::Stats e = StatsOf(*exact.Stub(p)), h = StatsOf(*half.Stub(p));
    EXPECT_LT(static_cast<double>(h.peer_wire_bytes_received()),
              0.8 * static_cast<double>(e.peer_wire_bytes_received()))
        << "float16 rows should take about half the bytes";
  }
}

}  // namespace
}  // namespace graphshard::server
