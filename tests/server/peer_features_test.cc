// Feature rows of same-host peers read from their mmap'ed parts (PeerFeatures::kLocal), and
// their neighbours sampled from them (PeerSampling::kLocal), give the same batches, bit for bit,
// as asking the peers with GatherFeatures and SampleOneHop (kRpc); a peer on another host, or
// whose files do not load here, is still asked. Real in-process servers on port 0.
#include <gtest/gtest.h>

#include <filesystem>

#include "partitioner/read_input.h"
#include "rpc/channel.h"
#include "server/proto_convert.h"
#include "tests/server/test_cluster.h"
#include "tests/testing/source_paths.h"

namespace graphshard::server {
namespace {

using testing::Context;

// Calls of `method` a server answered (GetStats), over gRPC or the bulk transport ("bulk/...").
int64_t CallsOf(v1::PartitionService::Stub& stub, const std::string& method) {
  v1::Stats stats;
  EXPECT_TRUE(stub.GetStats(Context().get(), {}, &stats).ok());
  int64_t n = 0;
  for (const v1::RpcStats& rpc : stats.rpcs()) {
    if (rpc.method() == method || rpc.method() == "bulk/" + method) n += rpc.count();
  }
  return n;
}

std::vector<int64_t> Split(v1::PartitionService::Stub& stub, const std::string& name) {
  v1::GetSplitRequest req;
  req.set_split(name);
  v1::GetSplitResponse resp;
  EXPECT_TRUE(stub.GetSplit(Context().get(), req, &resp).ok());
  return *FromBytes<int64_t>(resp.ids(), "ids");
}

// Every batch of an epoch over `seeds`, inline (no client host id), serialized: the arrays are
// in the message, so equal strings are bitwise-equal batches.
std::vector<std::string> Epoch(v1::PartitionService::Stub& stub, const std::vector<int64_t>& seeds,
                               const v1::SamplingConfig& sampling) {
  v1::StreamBatchesRequest r;
  r.set_seeds(ToBytes<int64_t>(seeds));
  r.set_batch_size(32);
  r.set_shuffle(true);
  r.set_shuffle_seed(11);
  *r.mutable_sampling() = sampling;
  auto ctx = Context();
  auto reader = stub.StreamBatches(ctx.get(), r);
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

// Both clusters partition the same graph the same way (random, seed 7); every part streams its
// training seeds under each config.
template <typename G>
void ExpectSameBatches(const G& graph, int parts) {
  testing::TestCluster rpc(graph, parts, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc);
  testing::TestCluster local(graph, parts, {}, {}, PeerFeatures::kLocal, PeerSampling::kLocal);
  int64_t batches = 0;
  for (int p = 0; p < parts; ++p) {
    std::vector<int64_t> seeds = Split(*rpc.Stub(p), "train");
    ASSERT_EQ(seeds, Split(*local.Stub(p), "train"));
    for (const v1::SamplingConfig& config : Configs()) {
      std::vector<std::string> want = Epoch(*rpc.Stub(p), seeds, config);
      std::vector<std::string> got = Epoch(*local.Stub(p), seeds, config);
      ASSERT_EQ(got.size(), want.size());
      ASSERT_FALSE(got.empty());
      for (size_t b = 0; b < got.size(); ++b) {
        EXPECT_TRUE(got[b] == want[b]) << "part " << p << " batch " << b << " differs";
      }
      batches += std::ssize(got);
    }
  }
  EXPECT_GT(batches, 0);
  // The rpc cluster asked its peers for rows and neighbours; the local one read and sampled
  // their parts in-process.
  for (int p = 0; p < parts; ++p) {
    EXPECT_GT(CallsOf(*rpc.Stub(p), "GatherFeatures"), 0) << p;
    EXPECT_GT(CallsOf(*rpc.Stub(p), "SampleOneHop"), 0) << p;
    EXPECT_EQ(CallsOf(*local.Stub(p), "GatherFeatures"), 0) << p;
    EXPECT_EQ(CallsOf(*local.Stub(p), "SampleOneHop"), 0) << p;
  }
}

TEST(PeerFeaturesTest, MappedSameHostPeersGiveBitwiseEqualBatchesHomogeneous) {
  ExpectSameBatches(testing::ReadCora(), 3);
}

TEST(PeerFeaturesTest, MappedSameHostPeersGiveBitwiseEqualBatchesHeterogeneous) {
  auto graph =
      partitioner::ReadGraph(testing::SourceDir() + "/tests/data/imdb", partitioner::ReadOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ExpectSameBatches(*graph, 2);
}

// Two servers started by hand: part 0 from `dir0`, part 1 from `dir1` with host id `host1`
// (empty = this host's), both PeerFeatures::kLocal and PeerSampling::kLocal. Returns part 0's
// batches of one config and how many GatherFeatures and SampleOneHop calls part 1 answered.
struct HandCluster {
  std::vector<std::string> batches;
  int64_t gathers_by_part1 = 0;
  int64_t hops_by_part1 = 0;
};
HandCluster RunHandCluster(const std::string& dir0, const std::string& dir1,
                           const std::string& host1, const std::string& registry) {
  std::vector<std::unique_ptr<PartitionServer>> servers;
  for (int p = 0; p < 2; ++p) {
    ServerOptions so;
    so.partition_dir = p == 0 ? dir0 : dir1;
    so.part = p;
    so.registry_dir = registry;
    so.rpc_timeout = absl::Seconds(10);
    so.threads = 2;
    so.peer_features = PeerFeatures::kLocal;
    so.peer_sampling = PeerSampling::kLocal;
    if (p == 1) so.service.host_id = host1;
    auto s = PartitionServer::Start(so);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return {};
    servers.push_back(*std::move(s));
  }
  auto stub = [&](int p) {
    return v1::PartitionService::NewStub(rpc::MakeChannel(servers[p]->address()));
  };
  HandCluster out;
  out.batches = Epoch(*stub(0), Split(*stub(0), "train"), Configs()[0]);
  out.gathers_by_part1 = CallsOf(*stub(1), "GatherFeatures");
  out.hops_by_part1 = CallsOf(*stub(1), "SampleOneHop");
  for (auto& s : servers) s->Shutdown(absl::Seconds(1));
  return out;
}

class PeerFeaturesFallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    partitioner::PartitionOptions options;
    options.num_parts = 2;
    options.seed = 7;
    ASSERT_TRUE(partitioner::PartitionGraph(testing::ReadCora(), options, dir_ + "/p").ok());
    // The reference: both peers on this host, files loadable, read in-process.
    reference_ = RunHandCluster(dir_ + "/p", dir_ + "/p", "", dir_ + "/r0");
    ASSERT_FALSE(reference_.batches.empty());
    ASSERT_EQ(reference_.gathers_by_part1, 0);
    ASSERT_EQ(reference_.hops_by_part1, 0);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  HandCluster reference_;
};

TEST_F(PeerFeaturesFallbackTest, PeerOnAnotherHostIsAskedWithGatherFeatures) {
  HandCluster got = RunHandCluster(dir_ + "/p", dir_ + "/p", "another-host", dir_ + "/r1");
  EXPECT_GT(got.gathers_by_part1, 0);
  EXPECT_GT(got.hops_by_part1, 0);
  EXPECT_TRUE(got.batches == reference_.batches);
}

TEST_F(PeerFeaturesFallbackTest, PeerWhosePartDoesNotLoadHereIsAskedWithGatherFeatures) {
  // Part 0 serves from a copy of the folder that lacks part 1's features.
  std::filesystem::copy(dir_ + "/p", dir_ + "/q", std::filesystem::copy_options::recursive);
  std::filesystem::remove(dir_ + "/q/part_1/nodes/node/feat.npy");
  HandCluster got = RunHandCluster(dir_ + "/q", dir_ + "/p", "", dir_ + "/r2");
  EXPECT_GT(got.gathers_by_part1, 0);
  EXPECT_GT(got.hops_by_part1, 0);
  EXPECT_TRUE(got.batches == reference_.batches);
}

}  // namespace
}  // namespace graphshard::server
