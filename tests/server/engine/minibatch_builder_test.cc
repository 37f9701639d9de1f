// The minibatch builder over in-process parts (InProcessPeers): no gRPC, no network.

#include "server/engine/minibatch_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "common/half.h"
#include "tests/server/engine/in_process_parts.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::engine {
namespace {

using ::testing::HasSubstr;

// TinyGraph (partition_fixture.h) in two parts; part 0's own nodes as seeds.
class MinibatchBuilderTest : public testing::InProcessTwoPartsTest {
 protected:
  void SetUp() override {
    InProcessTwoPartsTest::SetUp();
    if (HasFatalFailure()) return;
    seeds_ = own_seeds();
  }

  MinibatchRequest Request(std::vector<int32_t> fanouts) const {
    MinibatchRequest r;
    r.seeds = seeds_;
    r.sampling.fanouts = std::move(fanouts);
    r.seed = 11;
    return r;
  }
  absl::StatusOr<Minibatch> Build(const MinibatchRequest& r) {
    return BuildMinibatch(*parts_.parts[0], *counting_, r);
  }

  std::vector<int64_t> seeds_;
};

TEST_F(MinibatchBuilderTest, FullFanoutIsTheTwoHopNeighbourhoodAcrossParts) {
  auto batch = Build(Request({-1, -1}));
  ASSERT_TRUE(batch.ok()) << batch.status();
  // Reference: in-edges of TinyGraph in input ids, two hops from the seeds.
  partitioner::Graph g = testing::TinyGraph();
  const partitioner::EdgeTypeData& edges = g.edge_types[0];
  std::vector<std::vector<int64_t>> in(10);
  for (int64_t e = 0; e < edges.num_edges(); ++e) in[edges.dst_ids[e]].push_back(edges.src_ids[e]);
  std::set<int64_t> want_nodes;
  std::set<std::pair<int64_t, int64_t>> want_edges;
  std::vector<int64_t> frontier;
  for (int64_t id : seeds_) {
    want_nodes.insert(parts_.orig_of[id]);
    frontier.push_back(parts_.orig_of[id]);
  }
  for (int hop = 0; hop < 2; ++hop) {
    std::vector<int64_t> next;
    for (int64_t v : frontier) {
      for (int64_t u : in[v]) {
        want_edges.insert({u, v});
        if (want_nodes.insert(u).second) next.push_back(u);
      }
    }
    frontier = next;
  }
  const NodeBlock& nodes = batch->nodes.at(0);
  const EdgeBlock& sampled = batch->edges.at(0);
  ASSERT_TRUE(std::equal(seeds_.begin(), seeds_.end(), nodes.ids.begin())) << "seeds first";
  std::set<int64_t> got_nodes;
  for (int64_t id : nodes.ids) got_nodes.insert(parts_.orig_of[id]);
  EXPECT_EQ(got_nodes, want_nodes);
  std::set<std::pair<int64_t, int64_t>> got_edges;
  for (size_t i = 0; i < sampled.src.size(); ++i) {
    got_edges.insert(
        {parts_.orig_of[nodes.ids[sampled.src[i]]], parts_.orig_of[nodes.ids[sampled.dst[i]]]});
  }
  EXPECT_EQ(got_edges, want_edges);
  // Features and labels as TinyGraph made them, whichever part owns the node.
  ASSERT_EQ(nodes.feat_dim, 3);
  std::vector<float> feat(nodes.ids.size() * 3);
  ASSERT_EQ(nodes.FeatureData().size(), feat.size() * 4);
  std::memcpy(feat.data(), nodes.FeatureData().data(), feat.size() * 4);
  for (size_t j = 0; j < nodes.ids.size(); ++j) {
    const int64_t v = parts_.orig_of[nodes.ids[j]];
    EXPECT_EQ(feat[3 * j], static_cast<float>(v));
    EXPECT_EQ(feat[3 * j + 1], static_cast<float>(v) + 0.5f);
    EXPECT_EQ(nodes.labels[j], v == 9 ? -1 : v % 3);
  }
  // A ring crosses the cut: the second hop and the gather reach part 1; part 0 never asks itself.
  EXPECT_GT(counting_->hops(1), 0);
  EXPECT_GT(counting_->gathers(1), 0);
  EXPECT_EQ(counting_->hops(0) + counting_->gathers(0), 0);
}

TEST_F(MinibatchBuilderTest, SameRequestGivesSameBatch) {
  MinibatchRequest r = Request({1, 1});
  r.sampling.replace = true;
  auto a = Build(r);
  auto b = Build(r);
  ASSERT_TRUE(a.ok() && b.ok());
  testing::ExpectSameBatch(*a, *b);
}

// Peers answer on their transport's thread; decoding and merging (the deferred part of an
// answer) must run on the builder's thread, which waits anyway, so that the transport's thread
// goes back to reading.
TEST_F(MinibatchBuilderTest, AnswersAreFinishedOnTheBuildersThreadNotTheTransports) {
  testing::TransportLikePeers transport(*peers_);
  const MinibatchRequest r = Request({2, 2});
  absl::StatusOr<Minibatch> got = BuildMinibatch(*parts_.parts[0], transport, r);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<Minibatch> want = Build(r);
  ASSERT_TRUE(want.ok()) << want.status();
  testing::ExpectSameBatch(*got, *want);
  const std::vector<std::thread::id> finished = transport.finished_on();
  ASSERT_FALSE(finished.empty()) << "the batch asked part 1 nothing";
  EXPECT_EQ(finished.size(), transport.transport_threads().size());
  for (std::thread::id t : finished) EXPECT_EQ(t, std::this_thread::get_id());
}

// --feature-store device: the same batch, without rows; the seeds' labels only; no peer is
// asked for rows.
TEST_F(MinibatchBuilderTest, WithoutFeaturesTheBatchIsTheSameWithoutRowsAndNoPeerIsAskedForRows) {
  MinibatchRequest r = Request({2, 2});
  absl::StatusOr<Minibatch> full = Build(r);
  ASSERT_TRUE(full.ok()) << full.status();
  const int gathers_before = counting_->gathers(1);
  ASSERT_GT(gathers_before, 0) << "the full batch asked part 1 for no rows";
  r.sampling.without_features = true;
  absl::StatusOr<Minibatch> lean = Build(r);
  ASSERT_TRUE(lean.ok()) << lean.status();
  EXPECT_EQ(counting_->gathers(1), gathers_before);
  EXPECT_TRUE(lean->features_omitted);
  EXPECT_FALSE(full->features_omitted);
  ASSERT_EQ(lean->nodes.size(), full->nodes.size());
  for (size_t t = 0; t < lean->nodes.size(); ++t) {
    const NodeBlock& a = lean->nodes[t];
    const NodeBlock& b = full->nodes[t];
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.num_sampled_nodes, b.num_sampled_nodes);
    EXPECT_EQ(a.feat_dim, b.feat_dim);
    EXPECT_GT(b.feat_dim, 0);
    EXPECT_TRUE(a.FeatureData().empty());
    ASSERT_EQ(a.labels.size(), b.labels.size());
    for (size_t j = 0; j < a.labels.size(); ++j) {
      EXPECT_EQ(a.labels[j], j < seeds_.size() ? b.labels[j] : -1) << "row " << j;
    }
  }
  ASSERT_EQ(lean->edges.size(), full->edges.size());
  for (size_t e = 0; e < lean->edges.size(); ++e) {
    EXPECT_EQ(lean->edges[e].src, full->edges[e].src);
    EXPECT_EQ(lean->edges[e].dst, full->edges[e].dst);
  }
}

TEST_F(MinibatchBuilderTest, BadRequestsAreInvalidArgumentBeforeAnyPeerIsAsked) {
  const int64_t foreign = parts_.parts[1]->part().FindNodes("node")->begin;
  struct Case {
    const char* what;
    MinibatchRequest request;
    const char* message;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, auto edit, const char* message) {
    MinibatchRequest r = Request({2, 2});
    edit(r);
    cases.push_back({what, std::move(r), message});
  };
  add(
      "no seeds", [](MinibatchRequest& r) { r.seeds.clear(); }, "empty batch");
  add(
      "foreign seed", [&](MinibatchRequest& r) { r.seeds.push_back(foreign); }, "owned by part 1");
  add(
      "unknown id", [](MinibatchRequest& r) { r.seeds.push_back(99); }, "is not a 'node' node id");
  add(
      "unknown type", [](MinibatchRequest& r) { r.seed_type = "paper"; }, "unknown node type");
  add(
      "no hops", [](MinibatchRequest& r) { r.sampling.fanouts.clear(); }, "hops");
  add(
      "fanout -2", [](MinibatchRequest& r) { r.sampling.fanouts[1] = -2; }, "fanouts[1] = -2");
  add(
      "unknown edge type",
      [](MinibatchRequest& r) {
        r.sampling.edge_fanouts["a__b__c"] = {1, 1};
      },
      "a__b__c");
  add(
      "repeated seed", [&](MinibatchRequest& r) { r.seeds.push_back(seeds_[0]); }, "twice");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto batch = Build(c.request);
    EXPECT_EQ(batch.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(batch.status().message()), HasSubstr(c.message));
  }
  EXPECT_EQ(counting_->total(), 0);
}

TEST_F(MinibatchBuilderTest, PeerErrorNamesThePartAndKeepsItsCode) {
  counting_->FailPart(1, absl::UnavailableError("peer down"));
  auto batch = Build(Request({-1, -1}));
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(batch.status().message()), HasSubstr("part 1: peer down"));
}

TEST_F(MinibatchBuilderTest, BFloat16TransportRoundsEachFeature) {
  MinibatchRequest r = Request({-1, -1});
  auto full = Build(r);
  r.sampling.feature_dtype = FeatureDtype::kBFloat16;
  auto half = Build(r);
  ASSERT_TRUE(full.ok() && half.ok());
  const NodeBlock &a = full->nodes.at(0), &b = half->nodes.at(0);
  ASSERT_EQ(a.ids, b.ids);
  ASSERT_EQ(b.FeatureData().size() * 2, a.FeatureData().size());
  for (size_t i = 0; i < b.FeatureData().size() / 2; ++i) {
    float want;
    uint16_t got;
    std::memcpy(&want, a.FeatureData().data() + 4 * i, 4);
    std::memcpy(&got, b.FeatureData().data() + 2 * i, 2);
    EXPECT_EQ(common::BFloat16ToFloat(got), common::BFloat16ToFloat(common::FloatToBFloat16(want)));
    EXPECT_LE(std::fabs(common::BFloat16ToFloat(got) - want), std::fabs(want) / 256) << i;
  }
}

}  // namespace
}  // namespace graphshard::engine
