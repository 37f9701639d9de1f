// Heterogeneous and disjoint sampling against the exact neighbourhood on the unpartitioned graph.
#include <gtest/gtest.h>

#include <set>

#include "common/partition_part.h"
#include "partitioner/read_input.h"
#include "server/proto_convert.h"
#include "tests/server/test_cluster.h"
#include "tests/testing/source_paths.h"

namespace graphshard::server {
namespace {

using testing::Context;
using Key = std::pair<std::string, int64_t>;  // (node type, input id)

class HeteroSamplingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto graph = partitioner::ReadGraph(testing::SourceDir() + "/tests/data/imdb",
                                        partitioner::ReadOptions{});
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = new partitioner::Graph(*std::move(graph));
    // Shared memory off and peers asked with GatherFeatures: peers exchange rows as bytes over
    // gRPC here (partition_server_test exercises the shared-memory path between peers).
    server::ServiceOptions service;
    service.shared_memory = false;
    cluster_ =
        new testing::TestCluster(*graph_, 2, engine::Limits{}, service, server::PeerFeatures::kRpc);
    for (int p = 0; p < 2; ++p) {
      auto part = common::PartitionPart::Load(cluster_->partition_dir(), p);
      ASSERT_TRUE(part.ok()) << part.status();
      for (const auto& t : (*part)->manifest().node_types) {
        const common::NodeShard* s = (*part)->FindNodes(t.name);
        orig_[t.name].insert(orig_[t.name].end(), s->orig_ids.begin(), s->orig_ids.end());
      }
    }
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete graph_;
  }

  // In-edges per (dst type, input id): (edge type, src input id).
  static std::map<Key, std::vector<std::pair<std::string, int64_t>>> InEdges() {
    std::map<Key, std::vector<std::pair<std::string, int64_t>>> in;
    for (const auto& e : graph_->edge_types) {
      for (int64_t i = 0; i < e.num_edges(); ++i) {
        in[{e.dst, e.dst_ids[i]}].push_back({e.Name(), e.src_ids[i]});
      }
    }
    return in;
  }

  static partitioner::Graph* graph_;
  static testing::TestCluster* cluster_;
  static std::map<std::string, std::vector<int64_t>> orig_;
};

partitioner::Graph* HeteroSamplingTest::graph_ = nullptr;
testing::TestCluster* HeteroSamplingTest::cluster_ = nullptr;
std::map<std::string, std::vector<int64_t>> HeteroSamplingTest::orig_;

std::vector<int64_t> TrainSeeds(testing::TestCluster& c, int part, size_t n) {
  v1::GetSplitRequest req;
  req.set_split("train");
  v1::GetSplitResponse resp;
  EXPECT_TRUE(c.Stub(part)->GetSplit(Context().get(), req, &resp).ok());
  auto ids = FromBytes<int64_t>(resp.ids(), "ids");
  std::vector<int64_t> out = *ids;
  if (out.size() > n) out.resize(n);
  return out;
}

TEST_F(HeteroSamplingTest, FullFanoutEqualsExactKHopNeighbourhoodPerType) {
  v1::Metadata meta;
  ASSERT_TRUE(cluster_->Stub(0)->GetMetadata(Context().get(), {}, &meta).ok());
  ASSERT_EQ(meta.target_type(), "movie");
  ASSERT_EQ(meta.node_types_size(), 3);
  std::vector<int64_t> seeds = TrainSeeds(*cluster_, 0, 16);
  v1::SampleMinibatchRequest req;
  req.set_seeds(ToBytes<int64_t>(seeds));
  for (int h = 0; h < 2; ++h) req.mutable_sampling()->add_fanouts(-1);
  v1::Minibatch batch;
  grpc::Status s = cluster_->Stub(0)->SampleMinibatch(Context().get(), req, &batch);
  ASSERT_TRUE(s.ok()) << s.error_message();
  testing::Decoded d = testing::Decode(batch);

  auto in = InEdges();
  std::set<Key> seen;
  std::vector<Key> frontier;
  for (int64_t id : seeds) {
    seen.insert({"movie", orig_["movie"][id]});
    frontier.push_back({"movie", orig_["movie"][id]});
  }
  std::set<std::tuple<std::string, int64_t, int64_t>> want_edges;
  for (int hop = 0; hop < 2; ++hop) {
    std::vector<Key> next;
    for (const Key& v : frontier) {
      for (const auto& [etype, src] : in[v]) {
        want_edges.insert({etype, src, v.second});
        std::string src_type = etype.substr(0, etype.find("__"));
        if (seen.insert({src_type, src}).second) next.push_back({src_type, src});
      }
    }
    frontier = next;
  }
  std::set<Key> got;
  for (const auto& [type, block] : d.nodes) {
    for (int64_t id : block.ids) EXPECT_TRUE(got.insert({type, orig_[type][id]}).second);
  }
  EXPECT_EQ(got, seen);
  std::set<std::tuple<std::string, int64_t, int64_t>> got_edges;
  for (const auto& [etype, e] : d.edges) {
    std::string src_type = etype.substr(0, etype.find("__"));
    std::string dst_type = etype.substr(etype.rfind("__") + 2);
    for (size_t i = 0; i < e.src.size(); ++i) {
      got_edges.insert({etype, orig_[src_type][d.nodes[src_type].ids[e.src[i]]],
                        orig_[dst_type][d.nodes[dst_type].ids[e.dst[i]]]});
    }
  }
  EXPECT_EQ(got_edges, want_edges);
  EXPECT_GT(want_edges.size(), 50u);
  // Features: the original rows of every type.
  for (const auto& t : graph_->node_types) {
    const std::vector<int64_t>& ids = d.nodes[t.name].ids;
    std::vector<float> feat = d.Features(t.name);
    ASSERT_EQ(feat.size(), ids.size() * t.feat_dim);
    for (size_t j = 0; j < ids.size(); ++j) {
      int64_t o = orig_[t.name][ids[j]];
      for (int64_t f = 0; f < t.feat_dim; ++f) {
        ASSERT_EQ(feat[j * t.feat_dim + f], t.features[o * t.feat_dim + f]) << t.name << " " << o;
      }
    }
  }
  EXPECT_EQ(d.nodes["movie"].num_sampled[0], 16);
  EXPECT_EQ(d.nodes["actor"].num_sampled[0], 0);
}

TEST_F(HeteroSamplingTest, PerEdgeTypeFanoutsBoundEachRelation) {
  std::vector<int64_t> seeds = TrainSeeds(*cluster_, 1, 50);
  v1::SampleMinibatchRequest req;
  req.set_seeds(ToBytes<int64_t>(seeds));
  req.mutable_sampling()->add_fanouts(2);
  (*req.mutable_sampling()->mutable_edge_fanouts())["director__director_to_movie__movie"]
      .add_fanouts(0);
  v1::Minibatch batch;
  grpc::Status s = cluster_->Stub(1)->SampleMinibatch(Context().get(), req, &batch);
  ASSERT_TRUE(s.ok()) << s.error_message();
  testing::Decoded d = testing::Decode(batch);
  EXPECT_TRUE(d.edges["director__director_to_movie__movie"].src.empty());
  EXPECT_LE(d.edges["actor__actor_to_movie__movie"].src.size(), 2 * seeds.size());
  EXPECT_GT(d.edges["actor__actor_to_movie__movie"].src.size(), seeds.size());
  EXPECT_TRUE(d.nodes["director"].ids.empty());

  (*req.mutable_sampling()->mutable_edge_fanouts())["no__such__type"].add_fanouts(1);
  s = cluster_->Stub(1)->SampleMinibatch(Context().get(), req, &batch);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// Disjoint mode: each seed gets its own tree; with fanout -1 tree i holds exactly the k-hop
// neighbourhood of seed i, and edges never cross trees.
TEST_F(HeteroSamplingTest, DisjointTreesAreEachSeedsOwnNeighbourhood) {
  std::vector<int64_t> seeds = TrainSeeds(*cluster_, 0, 6);
  v1::SampleMinibatchRequest req;
  req.set_seeds(ToBytes<int64_t>(seeds));
  req.mutable_sampling()->add_fanouts(-1);
  req.mutable_sampling()->add_fanouts(-1);
  req.mutable_sampling()->set_disjoint(true);
  v1::Minibatch batch;
  ASSERT_TRUE(cluster_->Stub(0)->SampleMinibatch(Context().get(), req, &batch).ok());
  testing::Decoded d = testing::Decode(batch);
  auto in = InEdges();
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::set<Key> want = {{"movie", orig_["movie"][seeds[i]]}};
    std::vector<Key> frontier(want.begin(), want.end());
    for (int hop = 0; hop < 2; ++hop) {
      std::vector<Key> next;
      for (const Key& v : frontier) {
        for (const auto& [etype, src] : in[v]) {
          Key k = {etype.substr(0, etype.find("__")), src};
          if (want.insert(k).second) next.push_back(k);
        }
      }
      frontier = next;
    }
    std::set<Key> got;
    for (const auto& [type, block] : d.nodes) {
      ASSERT_EQ(block.tree.size(), block.ids.size());
      for (size_t j = 0; j < block.ids.size(); ++j) {
        if (block.tree[j] == static_cast<int64_t>(i)) got.insert({type, orig_[type][block.ids[j]]});
      }
    }
    EXPECT_EQ(got, want) << "tree " << i;
  }
  for (const auto& [etype, e] : d.edges) {
    std::string src_type = etype.substr(0, etype.find("__"));
    std::string dst_type = etype.substr(etype.rfind("__") + 2);
    for (size_t k = 0; k < e.src.size(); ++k) {
      ASSERT_EQ(d.nodes[src_type].tree[e.src[k]], d.nodes[dst_type].tree[e.dst[k]]);
    }
  }
  // The seeds are the first nodes, tree i = seed i.
  for (size_t i = 0; i < seeds.size(); ++i) {
    EXPECT_EQ(d.nodes["movie"].ids[i], seeds[i]);
    EXPECT_EQ(d.nodes["movie"].tree[i], static_cast<int64_t>(i));
  }
}

}  // namespace
}  // namespace graphshard::server
