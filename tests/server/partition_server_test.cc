#include "server/partition_server.h"

#include <set>

#include <gtest/gtest.h>

#include "common/partition_part.h"
#include "rpc/channel.h"
#include "server/proto_convert.h"
#include "tests/server/test_cluster.h"

namespace graphshard::server {
namespace {

using testing::Context;

template <typename T>
std::vector<T> Vec(const std::string& bytes) {
  auto v = FromBytes<T>(bytes, "test");
  EXPECT_TRUE(v.ok());
  return *v;
}

class PartitionServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graph_ = new partitioner::Graph(testing::ReadCora());
    engine::Limits limits;
    limits.max_batch_size = 512;
    // Peers asked with GatherFeatures (answers through shared memory: checked below);
    // peer_features_test covers reading same-host peers' parts in-process.
    cluster_ = new testing::TestCluster(*graph_, 2, limits, {}, PeerFeatures::kRpc);
    // new id -> input id, from both parts' orig_id.npy.
    for (int p = 0; p < 2; ++p) {
      auto part = common::PartitionPart::Load(cluster_->partition_dir(), p);
      ASSERT_TRUE(part.ok()) << part.status();
      const common::NodeShard* nodes = (*part)->FindNodes("node");
      orig_.insert(orig_.end(), nodes->orig_ids.begin(), nodes->orig_ids.end());
    }
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete graph_;
  }

  std::vector<int64_t> Split(int part, const std::string& name) {
    v1::GetSplitRequest req;
    req.set_split(name);
    v1::GetSplitResponse resp;
    grpc::Status s = cluster_->Stub(part)->GetSplit(Context().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return Vec<int64_t>(resp.ids());
  }

  grpc::Status Minibatch(int part, const std::vector<int64_t>& seeds,
                         const std::vector<int>& fanouts, v1::Minibatch* out,
                         uint64_t seed = 1) {
    v1::SampleMinibatchRequest req;
    req.set_seeds(ToBytes<int64_t>(seeds));
    for (int f : fanouts) req.mutable_sampling()->add_fanouts(f);
    req.set_seed(seed);
    return cluster_->Stub(part)->SampleMinibatch(Context().get(), req, out);
  }

  static partitioner::Graph* graph_;
  static testing::TestCluster* cluster_;
  static std::vector<int64_t> orig_;
};

partitioner::Graph* PartitionServerTest::graph_ = nullptr;
testing::TestCluster* PartitionServerTest::cluster_ = nullptr;
std::vector<int64_t> PartitionServerTest::orig_;

TEST_F(PartitionServerTest, MetadataDescribesThePart) {
  v1::Metadata meta;
  ASSERT_TRUE(cluster_->Stub(1)->GetMetadata(Context().get(), {}, &meta).ok());
  EXPECT_EQ(meta.part(), 1);
  EXPECT_EQ(meta.num_parts(), 2);
  EXPECT_EQ(meta.num_nodes(), 2708);
  EXPECT_EQ(meta.feat_dim(), 1433);
  EXPECT_EQ(meta.num_classes(), 7);
  EXPECT_EQ(Split(0, "train").size() + Split(1, "train").size(), 140u);
}

// With fanout -1 the distributed batch must be exactly the k-hop in-neighbourhood of the seeds
// on the unpartitioned graph, hop by hop, with the original feature rows and labels.
TEST_F(PartitionServerTest, FullFanoutBatchEqualsExactKHopNeighbourhood) {
  std::vector<int64_t> seeds = Split(0, "train");
  ASSERT_GT(seeds.size(), 20u);
  seeds.resize(20);
  v1::Minibatch batch;
  grpc::Status s = Minibatch(0, seeds, {-1, -1}, &batch);
  ASSERT_TRUE(s.ok()) << s.error_message();

  // Reference BFS over in-edges in input ids.
  const partitioner::NodeTypeData& graph_nodes = graph_->node_types.at(0);
  const partitioner::EdgeTypeData& graph_edges = graph_->edge_types.at(0);
  std::vector<std::vector<int64_t>> in(graph_nodes.num_nodes);
  for (int64_t e = 0; e < graph_edges.num_edges(); ++e) {
    in[graph_edges.dst_ids[e]].push_back(graph_edges.src_ids[e]);
  }
  std::set<int64_t> seen;
  std::vector<int64_t> frontier;
  for (int64_t id : seeds) {
    seen.insert(orig_[id]);
    frontier.push_back(orig_[id]);
  }
  std::set<std::pair<int64_t, int64_t>> want_edges;
  std::vector<int64_t> want_hop_nodes = {static_cast<int64_t>(seeds.size())};
  for (int hop = 0; hop < 2; ++hop) {
    std::vector<int64_t> next;
    for (int64_t v : frontier) {
      for (int64_t u : in[v]) {
        want_edges.insert({u, v});
        if (seen.insert(u).second) next.push_back(u);
      }
    }
    want_hop_nodes.push_back(static_cast<int64_t>(next.size()));
    frontier = next;
  }

  testing::Decoded d = testing::Decode(batch);
  std::vector<int64_t> nodes = d.nodes["node"].ids;
  std::vector<int64_t> src = d.edges["node__to__node"].src;
  std::vector<int64_t> dst = d.edges["node__to__node"].dst;
  std::vector<float> feat = d.Features("node");
  std::vector<int64_t> labels = d.nodes["node"].labels;
  EXPECT_EQ(batch.batch_size(), 20);
  EXPECT_TRUE(std::equal(seeds.begin(), seeds.end(), nodes.begin())) << "seeds come first";
  std::set<int64_t> got_nodes;
  for (int64_t id : nodes) got_nodes.insert(orig_[id]);
  EXPECT_EQ(got_nodes.size(), nodes.size()) << "a node appears twice";
  EXPECT_EQ(got_nodes, seen);
  std::set<std::pair<int64_t, int64_t>> got_edges;
  for (size_t i = 0; i < src.size(); ++i) {
    got_edges.insert({orig_[nodes[src[i]]], orig_[nodes[dst[i]]]});
  }
  EXPECT_EQ(got_edges.size(), src.size()) << "an edge appears twice";
  EXPECT_EQ(got_edges, want_edges);
  EXPECT_EQ(d.nodes["node"].num_sampled, want_hop_nodes);
  int64_t edge_total = 0;
  for (int64_t n : d.edges["node__to__node"].num_sampled) edge_total += n;
  EXPECT_EQ(edge_total, static_cast<int64_t>(src.size()));

  const int64_t f = graph_nodes.feat_dim;
  ASSERT_EQ(batch.nodes(0).feat_dim(), f);
  ASSERT_EQ(feat.size(), nodes.size() * f);
  for (size_t j = 0; j < nodes.size(); ++j) {
    int64_t o = orig_[nodes[j]];
    ASSERT_TRUE(std::equal(feat.begin() + j * f, feat.begin() + (j + 1) * f,
                           graph_nodes.features.span().begin() + o * f))
        << "feature row of node " << o;
    ASSERT_EQ(labels[j], graph_nodes.labels[o]);
  }
  // Both servers run on this host: part 1 answered part 0's feature gather through shared
  // memory, not bytes over gRPC.
  v1::Stats stats;
  ASSERT_TRUE(cluster_->Stub(1)->GetStats(Context().get(), {}, &stats).ok());
  EXPECT_GT(stats.shm_bytes(), 0);
}

TEST_F(PartitionServerTest, SampledBatchIsDeterministicAndBounded) {
  std::vector<int64_t> seeds = Split(1, "train");
  v1::Minibatch a, b, c;
  ASSERT_TRUE(Minibatch(1, seeds, {3, 2}, &a, 42).ok());
  ASSERT_TRUE(Minibatch(1, seeds, {3, 2}, &b, 42).ok());
  ASSERT_TRUE(Minibatch(1, seeds, {3, 2}, &c, 43).ok());
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
  EXPECT_NE(a.edges(0).src().data(), c.edges(0).src().data());
  // Hop 1 samples at most 3 per seed, hop 2 at most 2 per new node.
  EXPECT_LE(a.edges(0).num_sampled_edges(0), 3 * static_cast<int64_t>(seeds.size()));
  EXPECT_LE(a.edges(0).num_sampled_edges(1), 2 * a.nodes(0).num_sampled_nodes(1));
}

TEST_F(PartitionServerTest, MalformedRequestsGetInvalidArgumentAndServerKeepsServing) {
  std::vector<int64_t> own = Split(0, "train");
  std::vector<int64_t> other = Split(1, "train");
  v1::Minibatch out;
  auto expect_invalid = [&](grpc::Status s, const std::string& text) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find(text), std::string::npos) << s.error_message();
  };
  expect_invalid(Minibatch(0, {2708}, {5}, &out), "not a 'node' node id");
  expect_invalid(Minibatch(0, {-3}, {5}, &out), "not a 'node' node id");
  expect_invalid(Minibatch(0, {other[0]}, {5}, &out), "owned by part 1");
  expect_invalid(Minibatch(0, {own[0]}, {-2}, &out), "fanouts[0] = -2");
  expect_invalid(Minibatch(0, {own[0]}, {}, &out), "hops");
  expect_invalid(Minibatch(0, {}, {5}, &out), "empty batch");
  expect_invalid(Minibatch(0, std::vector<int64_t>(513, own[0]), {5}, &out), "exceeds the limit");
  expect_invalid(Minibatch(0, {own[0], own[0]}, {5}, &out), "twice");

  v1::SampleMinibatchRequest ragged;
  ragged.set_seeds(std::string(7, '\0'));
  ragged.mutable_sampling()->add_fanouts(5);
  expect_invalid(cluster_->Stub(0)->SampleMinibatch(Context().get(), ragged, &out), "multiple");
  v1::SampleOneHopRequest hop;
  v1::HopItem* item = hop.add_items();
  item->set_edge_type("node__to__node");
  item->set_seeds(ToBytes<int64_t>(std::vector<int64_t>{other[0]}));
  item->set_fanout(5);
  v1::SampleOneHopResponse hop_out;
  expect_invalid(cluster_->Stub(0)->SampleOneHop(Context().get(), hop, &hop_out), "owned by");
  v1::GatherFeaturesRequest gather;
  v1::TypedIds* typed = gather.add_items();
  typed->set_node_type("node");
  typed->set_ids(ToBytes<int64_t>(std::vector<int64_t>{1 << 30}));
  v1::GatherFeaturesResponse gather_out;
  expect_invalid(cluster_->Stub(1)->GatherFeatures(Context().get(), gather, &gather_out),
                 "not a 'node' node id");
  v1::GetSplitRequest split;
  split.set_split("nope");
  v1::GetSplitResponse split_out;
  expect_invalid(cluster_->Stub(0)->GetSplit(Context().get(), split, &split_out), "nope");

  // Still serving.
  ASSERT_TRUE(Minibatch(0, {own[0]}, {5, 5}, &out).ok());
  EXPECT_EQ(out.batch_size(), 1);
}

TEST(PartitionServerStartTest, CorruptPartitionFailsToStartNamingTheFile) {
  std::string dir = testing::MakeTempDir();
  partitioner::PartitionOptions options;
  options.num_parts = 2;
  ASSERT_TRUE(partitioner::PartitionGraph(testing::ReadCora(), options, dir + "/p").ok());
  std::filesystem::remove(dir + "/p/part_1/edges/node__to__node/indices.npy");
  ServerOptions so;
  so.partition_dir = dir + "/p";
  so.part = 1;
  auto s = PartitionServer::Start(so);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("part_1/edges/node__to__node/indices.npy"),
            std::string::npos)
      << s.status();
  std::filesystem::remove_all(dir);
}

TEST(PartitionServerStartTest, UnreachablePeerGivesUnavailableNamingIt) {
  partitioner::Graph graph = testing::ReadCora();
  std::string dir = testing::MakeTempDir();
  partitioner::PartitionOptions options;
  options.num_parts = 2;
  ASSERT_TRUE(partitioner::PartitionGraph(graph, options, dir + "/p").ok());
  ServerOptions so;
  so.partition_dir = dir + "/p";
  so.part = 0;
  so.registry_dir = dir + "/registry";  // part 1 never registers
  so.rpc_timeout = absl::Seconds(2);
  auto s = PartitionServer::Start(so);
  ASSERT_TRUE(s.ok()) << s.status();
  auto part = common::PartitionPart::Load(dir + "/p", 0);
  ASSERT_TRUE(part.ok());
  int64_t seed = (*part)->FindNodes("node")->splits.at("train")[0];
  auto stub = v1::PartitionService::NewStub(rpc::MakeChannel((*s)->address()));
  v1::SampleMinibatchRequest req;
  req.set_seeds(ToBytes<int64_t>(std::vector<int64_t>{seed}));
  for (int h = 0; h < 3; ++h) req.mutable_sampling()->add_fanouts(-1);
  v1::Minibatch out;
  grpc::Status status = stub->SampleMinibatch(Context().get(), req, &out);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_NE(status.error_message().find("part 1"), std::string::npos) << status.error_message();
  (*s)->Shutdown(absl::Seconds(1));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace graphshard::server
