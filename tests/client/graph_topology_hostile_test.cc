// The GPU sampler's reads (client/graph_topology.h) against a server that lies or hangs: a fake
// part-0 server relays a real one's answers (real in-process servers on Cora, 2 parts, port 0)
// and then tampers with them. Each lie is an error that names the part or its server, and
// nothing the lie carried comes back; a hung server costs the RPC deadline, twice (the call is
// asked once more of the part's live replica, here the same liar), not a hang.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/choices.h"
#include "client/graph_topology.h"
#include "client/server_set.h"
#include "common/bytes.h"
#include "rpc/channel.h"
#include "tests/server/test_cluster.h"

namespace graphshard::client {
namespace {

enum class Lie {
  kNone,
  kNeighbourOutsideTheGraph,  // one in-neighbour id past the graph's nodes
  kCountsPastTheNeighbours,   // a node's count raised by one
  kOneLabelShort,             // one label fewer than the nodes asked
  kHang,                      // no answer until the caller gives up
  kEdgesNearInt64Max,         // metadata: num_local_edges = INT64_MAX - 1
};

class LyingServer final : public v1::PartitionService::Service {
 public:
  explicit LyingServer(const std::string& real)
      : real_(v1::PartitionService::NewStub(rpc::MakeChannel(real))) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~LyingServer() override { server_->Shutdown(std::chrono::system_clock::now()); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  void set_lie(Lie lie) { lie_ = lie; }
  int calls() const { return calls_; }

  grpc::Status GetMetadata(grpc::ServerContext* /*ctx*/, const v1::GetMetadataRequest* request,
                           v1::Metadata* response) override {
    grpc::ClientContext relay;
    grpc::Status s = real_->GetMetadata(&relay, *request, response);
    if (s.ok() && lie_ == Lie::kEdgesNearInt64Max) {
      response->set_num_local_edges(std::numeric_limits<int64_t>::max() - 1);
    }
    return s;
  }
  grpc::Status SampleOneHop(grpc::ServerContext* ctx, const v1::SampleOneHopRequest* request,
                            v1::SampleOneHopResponse* response) override {
    ++calls_;
    if (lie_ == Lie::kHang) return Hang(ctx);
    grpc::ClientContext relay;
    grpc::Status s = real_->SampleOneHop(&relay, *request, response);
    if (!s.ok() || response->items_size() != 1) return s;
    v1::HopResult* item = response->mutable_items(0);
    if (lie_ == Lie::kNeighbourOutsideTheGraph) {
      auto n = common::FromBytes<int64_t>(item->neighbors(), "neighbors");
      if (n.ok() && !n->empty()) {
        (*n)[n->size() / 2] = 1 << 20;
        item->set_neighbors(common::ToBytes<int64_t>(*n));
      }
    } else if (lie_ == Lie::kCountsPastTheNeighbours) {
      auto c = common::FromBytes<int64_t>(item->counts(), "counts");
      if (c.ok() && !c->empty()) {
        ++(*c)[0];
        item->set_counts(common::ToBytes<int64_t>(*c));
      }
    }
    return s;
  }
  grpc::Status GatherFeatures(grpc::ServerContext* ctx, const v1::GatherFeaturesRequest* request,
                              v1::GatherFeaturesResponse* response) override {
    ++calls_;
    if (lie_ == Lie::kHang) return Hang(ctx);
    grpc::ClientContext relay;
    grpc::Status s = real_->GatherFeatures(&relay, *request, response);
    if (s.ok() && lie_ == Lie::kOneLabelShort && response->items_size() == 1) {
      auto l = common::FromBytes<int64_t>(response->items(0).labels(), "labels");
      if (l.ok() && !l->empty()) {
        l->pop_back();
        response->mutable_items(0)->set_labels(common::ToBytes<int64_t>(*l));
      }
    }
    return s;
  }

 private:
  static grpc::Status Hang(grpc::ServerContext* ctx) {
    for (int i = 0; i < 300 && !ctx->IsCancelled(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "gave up hanging");
  }

  std::unique_ptr<v1::PartitionService::Stub> real_;
  std::atomic<Lie> lie_{Lie::kNone};
  std::atomic<int> calls_{0};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

class GraphTopologyHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ =
        std::make_unique<graphshard::testing::TestCluster>(graphshard::testing::ReadCora(), 2);
    DiscoveryOptions o;
    o.registry_dir = cluster_->registry_dir();
    o.server_wait_s = 10;
    auto set = ConnectServers(o);
    ASSERT_TRUE(set.ok()) << set.status();
    servers_ = std::make_unique<ServerSet>(*std::move(set));
    liar_ = std::make_unique<LyingServer>(servers_->clients[0]->address());
    ClientOptions options;
    options.rpc_timeout_s = 1;  // the hung server's cost
    auto client = PartitionClient::Create(liar_->address(), options, 0);
    ASSERT_TRUE(client.ok()) << client.status();
    liar_client_ = *std::move(client);
    client_of_ = [this](int part) -> absl::StatusOr<PartitionClient*> {
      return part == 0 ? liar_client_.get() : servers_->clients[1];
    };
  }
  const ServerMetadata& md() const { return servers_->metadata; }

  std::unique_ptr<graphshard::testing::TestCluster> cluster_;
  std::unique_ptr<ServerSet> servers_;
  std::unique_ptr<LyingServer> liar_;
  std::unique_ptr<PartitionClient> liar_client_;
  ClientOf client_of_;
};

TEST_F(GraphTopologyHostileTest, AnHonestRelayReadsTheSameTopology) {
  auto direct = ReadTopology(md(), [this](int part) -> absl::StatusOr<PartitionClient*> {
    return servers_->clients[static_cast<size_t>(part)];
  });
  ASSERT_TRUE(direct.ok()) << direct.status();
  auto relayed = ReadTopology(md(), client_of_);
  ASSERT_TRUE(relayed.ok()) << relayed.status();
  EXPECT_EQ(relayed->indptr, direct->indptr);
  EXPECT_EQ(relayed->indices, direct->indices);
  EXPECT_GT(liar_->calls(), 0);
}

TEST_F(GraphTopologyHostileTest, ANeighbourOutsideTheGraphIsDataLossNamingThePart) {
  liar_->set_lie(Lie::kNeighbourOutsideTheGraph);
  auto t = ReadTopology(md(), client_of_, 500, 4);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss) << t.status();
  EXPECT_TRUE(absl::StrContains(t.status().message(), "part 0")) << t.status();
  EXPECT_TRUE(absl::StrContains(t.status().message(), "outside the graph")) << t.status();
}

TEST_F(GraphTopologyHostileTest, CountsThatDoNotAddUpAreDataLossNamingTheServer) {
  liar_->set_lie(Lie::kCountsPastTheNeighbours);
  auto t = ReadTopology(md(), client_of_);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss) << t.status();
  EXPECT_TRUE(absl::StrContains(t.status().message(), liar_->address())) << t.status();
  EXPECT_TRUE(absl::StrContains(t.status().message(), "malformed")) << t.status();
}

TEST_F(GraphTopologyHostileTest, TooFewLabelsAreDataLossNamingTheServer) {
  liar_->set_lie(Lie::kOneLabelShort);
  const std::vector<int64_t> ids = {0, 1, 2, 3};  // part 0's
  auto labels = ReadLabels(md(), client_of_, ids);
  ASSERT_FALSE(labels.ok());
  EXPECT_EQ(labels.status().code(), absl::StatusCode::kDataLoss) << labels.status();
  EXPECT_TRUE(absl::StrContains(labels.status().message(), liar_->address())) << labels.status();
}

TEST_F(GraphTopologyHostileTest, AHungServerCostsTheDeadlineTwiceNotAHang) {
  liar_->set_lie(Lie::kHang);
  const auto start = std::chrono::steady_clock::now();
  auto t = ReadTopology(md(), client_of_, 1 << 14, 1);
  const double topology_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDeadlineExceeded) << t.status();
  EXPECT_TRUE(absl::StrContains(t.status().message(), "part 0")) << t.status();
  EXPECT_EQ(liar_->calls(), 2) << "asked once, then once more of the part's live replica";
  EXPECT_LT(topology_s, 10) << "two 1 s deadlines";
  auto labels = ReadLabels(md(), client_of_, std::vector<int64_t>{0, 1});
  ASSERT_FALSE(labels.ok());
  EXPECT_EQ(labels.status().code(), absl::StatusCode::kDeadlineExceeded) << labels.status();
}

// A part that claims (nearly) INT64_MAX edges: the sum over the parts saturates rather than
// wrapping negative, and --sampler auto then leaves the sampling to the servers (the topology
// cannot fit) instead of sizing a read from a wrapped count.
TEST_F(GraphTopologyHostileTest, AnEdgeCountPastInt64SaturatesAndAutoKeepsTheServers) {
  liar_->set_lie(Lie::kEdgesNearInt64Max);
  DiscoveryOptions o;
  o.servers = {liar_->address(), servers_->clients[1]->address()};
  o.server_wait_s = 10;
  auto set = ConnectServers(o);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->num_edges, std::numeric_limits<int64_t>::max());
  EXPECT_GT(servers_->num_edges, 0);
  EXPECT_LT(servers_->num_edges, 100000) << "Cora's honest count";
  EXPECT_EQ(TopologyDeviceBytes(set->metadata.num_nodes, set->num_edges),
            std::numeric_limits<int64_t>::max());
  AutoSamplerInputs in;
  in.num_nodes = set->metadata.num_nodes;
  in.num_edges = set->num_edges;
  in.free_device_bytes = int64_t{141} << 30;
  const SamplerChoice choice = ResolveAutoSampler(in);
  EXPECT_EQ(choice.sampler, Sampler::kServer) << choice.why;
  // Nor with the topology in host memory: the host cannot hold it either.
  in.topology = SamplerTopology::kHost;
  in.available_host_bytes = int64_t{512} << 30;
  EXPECT_EQ(ResolveAutoSampler(in).sampler, Sampler::kServer);
  in.topology = SamplerTopology::kDevice;
  in.available_host_bytes = absl::nullopt;
  in.num_edges = servers_->num_edges;  // the honest parts: Cora's topology fits
  EXPECT_EQ(ResolveAutoSampler(in).sampler, Sampler::kGpu);
}

}  // namespace
}  // namespace graphshard::client
