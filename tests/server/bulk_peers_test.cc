// Peers asked over the bulk transport (PeerTransport::kBulk) give the same batches, bit for bit,
// as peers asked over gRPC, for every (seed, epoch, batch): peers forced onto the network
// (PeerFeatures::kRpc, PeerSampling::kRpc) and no shared-memory answers. Real in-process servers
// on port 0.
#include "server/bulk_peers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include "partitioner/read_input.h"
#include "rpc/channel.h"
#include "server/proto_convert.h"
#include "tests/server/test_cluster.h"
#include "tests/testing/source_paths.h"

namespace graphshard::server {
namespace {

using testing::Context;

int64_t CallsOf(v1::PartitionService::Stub& stub, const std::string& method) {
  v1::Stats stats;
  EXPECT_TRUE(stub.GetStats(Context().get(), {}, &stats).ok());
  for (const v1::RpcStats& rpc : stats.rpcs()) {
    if (rpc.method() == method) return rpc.count();
  }
  return 0;
}

std::vector<int64_t> Split(v1::PartitionService::Stub& stub) {
  v1::GetSplitRequest req;
  req.set_split("train");
  v1::GetSplitResponse resp;
  EXPECT_TRUE(stub.GetSplit(Context().get(), req, &resp).ok());
  return *FromBytes<int64_t>(resp.ids(), "ids");
}

// Every batch of two epochs over `seeds`, inline, serialized: equal strings are bitwise-equal
// batches.
std::vector<std::string> Epochs(v1::PartitionService::Stub& stub, const std::vector<int64_t>& seeds,
                                const v1::SamplingConfig& sampling) {
  v1::StreamBatchesRequest r;
  r.set_seeds(ToBytes<int64_t>(seeds));
  r.set_batch_size(32);
  r.set_shuffle(true);
  r.set_shuffle_seed(11);
  r.set_num_epochs(2);
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
  configs[2].set_replace(true);
  configs[2].set_feature_dtype(v1::BFLOAT16);
  return configs;
}

// One server per part of `dir`, peers over the network only; `bulk_port[p]` -1 = part p has no
// bulk listener; `piece_bytes`: the servers' --peer-piece-mib in bytes (0 = whole answers).
class Cluster {
 public:
  Cluster(const std::string& dir, int parts, const std::string& registry, PeerTransport transport,
          std::vector<int> bulk_port = {}, bool shared_memory = false,
          int64_t piece_bytes = engine::kDefaultGatherPieceBytes) {
    for (int p = 0; p < parts; ++p) {
      ServerOptions so;
      so.partition_dir = dir;
      so.part = p;
      so.registry_dir = registry;
      so.rpc_timeout = absl::Seconds(10);
      so.threads = 2;
      so.peer_features = PeerFeatures::kRpc;
      so.peer_sampling = PeerSampling::kRpc;
      so.service.shared_memory = shared_memory;
      so.peer_transport = transport;
      so.peer_piece_bytes = piece_bytes;
      so.bulk_port = p < std::ssize(bulk_port) ? bulk_port[p] : 0;
      auto s = PartitionServer::Start(so);
      EXPECT_TRUE(s.ok()) << s.status();
      if (s.ok()) servers_.push_back(*std::move(s));
    }
  }
  ~Cluster() {
    for (auto& s : servers_) s->Shutdown(absl::Seconds(1));
  }
  std::unique_ptr<v1::PartitionService::Stub> Stub(int p) {
    return v1::PartitionService::NewStub(rpc::MakeChannel(servers_[p]->address()));
  }
  PartitionServer& server(int p) { return *servers_[p]; }

 private:
  std::vector<std::unique_ptr<PartitionServer>> servers_;
};

class BulkPeersTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  template <typename G>
  std::string Partition(const G& graph, int parts) {
    dir_ = testing::MakeTempDir();
    partitioner::PartitionOptions options;
    options.num_parts = parts;
    options.seed = 7;
    EXPECT_TRUE(partitioner::PartitionGraph(graph, options, dir_ + "/p").ok());
    return dir_ + "/p";
  }
  // Both clusters serve the same folder; every part streams two epochs under each config.
  // With `piece_bytes` > 0 the bulk cluster asks for peers' rows in pieces of that many bytes,
  // the gRPC one in whole answers.
  void ExpectSameBatches(const std::string& dir, int parts, int64_t piece_bytes = 0) {
    Cluster grpc(dir, parts, dir_ + "/r-grpc", PeerTransport::kGrpc, {}, false,
                 piece_bytes > 0 ? 0 : engine::kDefaultGatherPieceBytes);
    Cluster bulk(dir, parts, dir_ + "/r-bulk", PeerTransport::kBulk, {}, false,
                 piece_bytes > 0 ? piece_bytes : engine::kDefaultGatherPieceBytes);
    int64_t batches = 0;
    for (int p = 0; p < parts; ++p) {
      ASSERT_GT(bulk.server(p).bulk_port(), 0);
      std::vector<int64_t> seeds = Split(*grpc.Stub(p));
      for (const v1::SamplingConfig& config : Configs()) {
        std::vector<std::string> want = Epochs(*grpc.Stub(p), seeds, config);
        std::vector<std::string> got = Epochs(*bulk.Stub(p), seeds, config);
        ASSERT_EQ(got.size(), want.size());
        ASSERT_FALSE(got.empty());
        for (size_t b = 0; b < got.size(); ++b) {
          EXPECT_TRUE(got[b] == want[b]) << "part " << p << " batch " << b << " differs";
        }
        batches += std::ssize(got);
      }
    }
    EXPECT_GT(batches, 0);
    // Which path each cluster took: counted by the peers that answered.
    for (int p = 0; p < parts; ++p) {
      EXPECT_GT(CallsOf(*grpc.Stub(p), "SampleOneHop"), 0) << p;
      EXPECT_GT(CallsOf(*grpc.Stub(p), "GatherFeatures"), 0) << p;
      EXPECT_EQ(CallsOf(*grpc.Stub(p), "bulk/SampleOneHop"), 0) << p;
      EXPECT_GT(CallsOf(*bulk.Stub(p), "bulk/SampleOneHop"), 0) << p;
      EXPECT_GT(CallsOf(*bulk.Stub(p), "bulk/GatherFeatures"), 0) << p;
      EXPECT_EQ(CallsOf(*bulk.Stub(p), "SampleOneHop"), 0) << p;
      EXPECT_EQ(CallsOf(*bulk.Stub(p), "GatherFeatures"), 0) << p;
      if (piece_bytes > 0) {  // the same rows asked in more requests
        EXPECT_GT(CallsOf(*bulk.Stub(p), "bulk/GatherFeatures"),
                  2 * CallsOf(*grpc.Stub(p), "GatherFeatures"))
            << p;
      }
    }
  }
  std::string dir_;
};

TEST_F(BulkPeersTest, BulkPathGivesTheSameBatchesAsGrpcHomogeneous) {
  std::string dir = Partition(testing::ReadCora(), 3);
  ExpectSameBatches(dir, 3);
}

TEST_F(BulkPeersTest, BulkPathGivesTheSameBatchesAsGrpcHeterogeneous) {
  auto graph =
      partitioner::ReadGraph(testing::SourceDir() + "/tests/data/imdb", partitioner::ReadOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::string dir = Partition(*graph, 2);
  ExpectSameBatches(dir, 2);
}

// Peers' rows asked in pieces of 16 KiB (a few Cora rows, a few dozen IMDB ones; every dtype):
// the batches of whole answers, byte for byte.
TEST_F(BulkPeersTest, RowsAskedInPiecesGiveTheBatchesOfWholeAnswersHomogeneous) {
  ExpectSameBatches(Partition(testing::ReadCora(), 3), 3, 16 << 10);
}

TEST_F(BulkPeersTest, RowsAskedInPiecesGiveTheBatchesOfWholeAnswersHeterogeneous) {
  auto graph =
      partitioner::ReadGraph(testing::SourceDir() + "/tests/data/imdb", partitioner::ReadOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ExpectSameBatches(Partition(*graph, 2), 2, 16 << 10);
}

TEST_F(BulkPeersTest, PeerWithoutBulkPortIsAskedOverGrpc) {
  std::string dir = Partition(testing::ReadCora(), 2);
  Cluster grpc(dir, 2, dir_ + "/r-grpc", PeerTransport::kGrpc);
  Cluster mixed(dir, 2, dir_ + "/r-mixed", PeerTransport::kBulk, {0, -1});
  EXPECT_EQ(mixed.server(1).bulk_port(), 0);
  std::vector<int64_t> seeds = Split(*grpc.Stub(0));
  EXPECT_TRUE(Epochs(*mixed.Stub(0), seeds, Configs()[0]) ==
              Epochs(*grpc.Stub(0), seeds, Configs()[0]));
  EXPECT_GT(CallsOf(*mixed.Stub(1), "SampleOneHop"), 0);
  EXPECT_EQ(CallsOf(*mixed.Stub(1), "bulk/SampleOneHop"), 0);
}

// Same host with shared memory on: feature rows still come through a shared-memory segment (over
// gRPC, as without the bulk transport), hops over the bulk transport; same batches.
TEST_F(BulkPeersTest, SameHostGathersStayOnSharedMemory) {
  std::string dir = Partition(testing::ReadCora(), 2);
  Cluster grpc(dir, 2, dir_ + "/r-grpc", PeerTransport::kGrpc);
  Cluster shm(dir, 2, dir_ + "/r-shm", PeerTransport::kBulk, {}, /*shared_memory=*/true);
  std::vector<int64_t> seeds = Split(*grpc.Stub(0));
  EXPECT_TRUE(Epochs(*shm.Stub(0), seeds, Configs()[0]) ==
              Epochs(*grpc.Stub(0), seeds, Configs()[0]));
  EXPECT_GT(CallsOf(*shm.Stub(1), "GatherFeatures"), 0);
  EXPECT_EQ(CallsOf(*shm.Stub(1), "bulk/GatherFeatures"), 0);
  EXPECT_GT(CallsOf(*shm.Stub(1), "bulk/SampleOneHop"), 0);
  v1::Stats stats;
  ASSERT_TRUE(shm.Stub(1)->GetStats(Context().get(), {}, &stats).ok());
  EXPECT_GT(stats.shm_bytes(), 0);
}

// A request the peer refuses comes back with the peer's status code, naming the part.
TEST_F(BulkPeersTest, PeerErrorsKeepTheirCodeAndNameThePart) {
  std::string dir = Partition(testing::ReadCora(), 2);
  Cluster cluster(dir, 2, dir_ + "/r", PeerTransport::kBulk);
  PeerOptions po;
  po.registry_dir = dir_ + "/r";
  po.rpc_timeout = absl::Seconds(10);
  GrpcPeers grpc(po);
  transport::AsioClient client;
  BulkPeers peers(grpc, client, absl::Seconds(10));
  std::promise<absl::StatusOr<std::vector<engine::FeatureBlock>>> got;
  peers.GatherFeatures(1, {{"node", {-5}}}, engine::FeatureDtype::kFloat32,
                       [&got](engine::Answer<std::vector<engine::FeatureBlock>> r) {
                         got.set_value(std::move(r).Take());
                       });
  auto future = got.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  absl::Status s = future.get().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("part 1 at "), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace graphshard::server
