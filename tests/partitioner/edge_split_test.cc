// Edge splits for link prediction (partitioner/edge_split.h): the cut of undirected pairs, the
// removal of held-out edges (both directions, and from the reverse relation), determinism, the
// files each part gets, the chronological split of timed edges (with each edge's time), and
// the refusals naming what is missing.

#include "partitioner/edge_split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/partition_part.h"
#include "partitioner/partition.h"
#include "tests/testing/partition_fixture.h"
#include "tests/testing/temporal_fixture.h"

namespace graphshard::partitioner {
namespace {

using ::testing::HasSubstr;
using Pair = std::pair<int64_t, int64_t>;

// 30 nodes, a ring plus chords, made undirected (both directions stored).
Graph RingGraph() {
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < 30; ++v) {
    src.push_back(v);
    dst.push_back((v + 1) % 30);
    src.push_back(v);
    dst.push_back((v * 7 + 3) % 30);
  }
  Graph g = HomogeneousGraph(30, src, dst);
  g.node_types[0].feat_dim = 2;
  std::vector<float> feat;
  for (int64_t v = 0; v < 30; ++v) feat.insert(feat.end(), {static_cast<float>(v), 1.0f});
  g.node_types[0].features = Array<float>::Owned(feat);
  EdgeTransformOptions undirected;
  undirected.undirected = true;
  undirected.drop_self_loops = true;
  EXPECT_TRUE(TransformEdges(g, undirected).ok());
  return g;
}

std::set<Pair> EdgesOf(const EdgeTypeData& t) {
  std::set<Pair> out;
  for (int64_t e = 0; e < t.num_edges(); ++e) out.insert({t.src_ids[e], t.dst_ids[e]});
  return out;
}

std::vector<Pair> SplitOf(const EdgeTypeData& t, const std::string& name) {
  std::vector<Pair> out;
  const EdgeSplitData& s = t.splits.at(name);
  for (int64_t i = 0; i < s.src_ids.size(); ++i) out.push_back({s.src_ids[i], s.dst_ids[i]});
  return out;
}

Pair Undirected(Pair p) { return p.first < p.second ? p : Pair{p.second, p.first}; }

TEST(EdgeSplit, CutsUndirectedPairsAndRemovesHeldOutEdgesBothWays) {
  Graph g = RingGraph();
  const std::set<Pair> before = EdgesOf(g.edge_types[0]);
  std::set<Pair> pairs;
  for (const Pair& p : before) pairs.insert(Undirected(p));
  EdgeSplitOptions o;
  ASSERT_TRUE(ParseEdgeSplit("0.6,0.2,0.2", o).ok());
  o.seed = 3;
  ASSERT_TRUE(SplitEdges(g, o).ok());
  const EdgeTypeData& t = g.edge_types[0];
  const std::set<Pair> after = EdgesOf(t);
  std::set<Pair> seen;
  for (const std::string name : {"train", "val", "test"}) {
    for (const Pair& p : SplitOf(t, name)) {
      EXPECT_TRUE(before.count(p)) << "a supervision edge is an input edge";
      EXPECT_TRUE(seen.insert(Undirected(p)).second) << "each pair in one split, once";
      const bool held_out = name != "train";
      EXPECT_EQ(after.count(p), held_out ? 0u : 1u) << name;
      EXPECT_EQ(after.count({p.second, p.first}), held_out ? 0u : 1u) << name << " reversed";
    }
  }
  EXPECT_EQ(seen, pairs) << "fractions add up to 1: every pair is in a split";
  const auto n = static_cast<int64_t>(pairs.size());
  EXPECT_EQ(t.splits.at("val").src_ids.size(), std::llround(0.2 * static_cast<double>(n)));
  EXPECT_EQ(t.splits.at("test").src_ids.size(), std::llround(0.2 * static_cast<double>(n)));
  EXPECT_EQ(std::ssize(after), 2 * t.splits.at("train").src_ids.size());
}

TEST(EdgeSplit, IsAFunctionOfTheSeed) {
  EdgeSplitOptions o;
  o.seed = 1;
  Graph a = RingGraph(), b = RingGraph(), c = RingGraph();
  ASSERT_TRUE(SplitEdges(a, o).ok());
  ASSERT_TRUE(SplitEdges(b, o).ok());
  o.seed = 2;
  ASSERT_TRUE(SplitEdges(c, o).ok());
  EXPECT_EQ(SplitOf(a.edge_types[0], "test"), SplitOf(b.edge_types[0], "test"));
  EXPECT_NE(SplitOf(a.edge_types[0], "test"), SplitOf(c.edge_types[0], "test"));
}

// user -> movie ratings plus the reverse relation --undirected adds (movie__rev_rates__user).
Graph Ratings() {
  Graph g;
  g.node_types.resize(2);
  g.node_types[0].name = "user";
  g.node_types[0].num_nodes = 12;
  g.node_types[1].name = "movie";
  g.node_types[1].num_nodes = 8;
  std::vector<int64_t> src, dst;
  for (int64_t u = 0; u < 12; ++u) {
    for (int64_t k = 0; k < 3; ++k) {
      src.push_back(u);
      dst.push_back((u + 3 * k) % 8);
    }
  }
  EdgeTypeData rates;
  rates.src = "user";
  rates.rel = "rates";
  rates.dst = "movie";
  rates.src_ids = Array<int64_t>::Owned(src);
  rates.dst_ids = Array<int64_t>::Owned(dst);
  g.edge_types.push_back(std::move(rates));
  EdgeTransformOptions undirected;
  undirected.undirected = true;
  EXPECT_TRUE(TransformEdges(g, undirected).ok());
  return g;
}

TEST(EdgeSplit, HeteroRemovesHeldOutEdgesFromTheReverseRelation) {
  Graph g = Ratings();
  ASSERT_EQ(g.edge_types.size(), 2u);
  EdgeSplitOptions o;
  o.edge_type = "user__rates__movie";
  ASSERT_TRUE(SplitEdges(g, o).ok());
  const EdgeTypeData& fwd = g.edge_types[0];
  EXPECT_EQ(fwd.split_reverse, "movie__rev_rates__user");
  const std::set<Pair> rev = EdgesOf(g.edge_types[1]);
  for (const std::string name : {"val", "test"}) {
    for (const Pair& p : SplitOf(fwd, name)) {
      EXPECT_EQ(rev.count({p.second, p.first}), 0u) << name;
    }
  }
  for (const Pair& p : SplitOf(fwd, "train")) EXPECT_EQ(rev.count({p.second, p.first}), 1u);
}

TEST(EdgeSplit, RefusesNamingWhatIsMissing) {
  EdgeSplitOptions o;
  Graph g = Ratings();
  absl::Status s = SplitEdges(g, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--target-edge-type"));
  EXPECT_THAT(s.message(), HasSubstr("user__rates__movie"));
  o.edge_type = "user__likes__movie";
  s = SplitEdges(g, o);
  EXPECT_THAT(s.message(), HasSubstr("no such edge type"));
  o.edge_type = "user__rates__movie";
  o.reverse_edge_type = "user__rates__movie2";
  EXPECT_THAT(SplitEdges(g, o).message(), HasSubstr("--reverse-edge-type"));
  EXPECT_FALSE(ParseEdgeSplit("0.9,0.2,0.1", o).ok());
  EXPECT_FALSE(ParseEdgeSplit("0.9,0.1", o).ok());
  EXPECT_FALSE(ParseEdgeSplit("a,b,c", o).ok());
}

TEST(EdgeSplit, PartsHoldTheEdgesOfTheirDestinationsAndTrainingDegrees) {
  testing::ScratchDir tmp;
  Graph g = RingGraph();
  EdgeSplitOptions o;
  o.seed = 5;
  ASSERT_TRUE(SplitEdges(g, o).ok());
  PartitionOptions po;
  po.num_parts = 2;
  po.seed = 1;
  auto m = PartitionGraph(g, po, tmp.Sub("p"));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->edge_splits.count("node__to__node"));
  int64_t total_train = 0;
  std::vector<int64_t> degree_sum(30, 0);
  for (int p = 0; p < 2; ++p) {
    auto part = common::PartitionPart::Load(tmp.Sub("p"), p);
    ASSERT_TRUE(part.ok()) << part.status();
    const common::EdgeShard* e = (*part)->FindEdges("node__to__node");
    const common::NodeShard* n = (*part)->FindNodes("node");
    ASSERT_EQ(e->splits.size(), 3u);
    for (const auto& [name, view] : e->splits) {
      for (int64_t d : view.dst) {
        EXPECT_GE(d, n->begin);
        EXPECT_LT(d, n->end);
      }
    }
    const common::EdgeSplitView& train = e->splits.at("train");
    total_train += train.size();
    for (int64_t d : train.dst) ++degree_sum[static_cast<size_t>(d)];
    ASSERT_EQ(e->dst_degree.size(), 30u);
    if (p == 1) {
      for (size_t v = 0; v < 30; ++v) EXPECT_EQ(e->dst_degree[v], degree_sum[v]) << v;
    }
  }
  EXPECT_EQ(total_train, g.edge_types[0].splits.at("train").src_ids.size());
}

// Edges with times are cut chronologically by default (train earliest, test latest), each
// supervision edge keeps its edge's time, the times survive the removal of held-out edges, and
// every part gets <split>_time.npy aligned with <split>.npy; --edge-split-order random still
// shuffles.
TEST(EdgeSplit, TimedEdgesAreCutChronologicallyAndKeepTheirTimes) {
  Graph g = testing::TemporalTestGraph(80, 5, 1000, /*seed=*/4);
  const auto edge_time = testing::EdgeTimeOf(g);
  Graph shuffled = g;
  EdgeSplitOptions o;
  o.train = 0.7;
  o.val = 0.1;
  o.test = 0.2;
  ASSERT_TRUE(SplitEdges(g, o).ok());
  const EdgeTypeData& t = g.edge_types[0];
  ASSERT_EQ(t.time.size(), t.num_edges()) << "times must stay aligned with the kept edges";
  for (int64_t e = 0; e < t.num_edges(); ++e) {
    EXPECT_EQ(t.time[e], edge_time.at({t.src_ids[e], t.dst_ids[e]}));
  }
  auto times = [&](const std::string& name) {
    const EdgeSplitData& s = t.splits.at(name);
    EXPECT_EQ(s.time.size(), s.src_ids.size()) << name;
    std::vector<int64_t> out;
    for (int64_t i = 0; i < s.time.size(); ++i) {
      EXPECT_EQ(s.time[i], edge_time.at({s.src_ids[i], s.dst_ids[i]})) << name << " " << i;
      out.push_back(s.time[i]);
    }
    return out;
  };
  const auto train = times("train"), val = times("val"), test = times("test");
  ASSERT_FALSE(train.empty() || val.empty() || test.empty());
  EXPECT_LE(*std::max_element(train.begin(), train.end()),
            *std::min_element(val.begin(), val.end()));
  EXPECT_LE(*std::max_element(val.begin(), val.end()),
            *std::min_element(test.begin(), test.end()));
  EXPECT_TRUE(std::is_sorted(test.begin(), test.end()));

  testing::ScratchDir tmp;
  PartitionOptions po;
  po.num_parts = 2;
  po.seed = 1;
  ASSERT_TRUE(PartitionGraph(g, po, tmp.Sub("p")).ok());
  std::vector<std::unique_ptr<common::PartitionPart>> parts;
  std::vector<int64_t> orig_of(80, -1);  // global id -> input id
  for (int p = 0; p < 2; ++p) {
    auto part = common::PartitionPart::Load(tmp.Sub("p"), p);
    ASSERT_TRUE(part.ok()) << part.status();
    const common::NodeShard* n = (*part)->FindNodes("node");
    for (int64_t r = 0; r < n->num_rows(); ++r) orig_of[n->begin + r] = n->orig_ids[r];
    parts.push_back(*std::move(part));
  }
  int64_t loaded = 0;
  for (const auto& part : parts) {
    for (const auto& [name, view] : part->FindEdges("node__to__node")->splits) {
      ASSERT_TRUE(view.has_time) << name;
      ASSERT_EQ(view.time.size(), view.src.size());
      for (int64_t i = 0; i < view.size(); ++i) {
        EXPECT_EQ(view.time[i], edge_time.at({orig_of[view.src[i]], orig_of[view.dst[i]]}));
        ++loaded;
      }
    }
  }
  EXPECT_EQ(loaded, static_cast<int64_t>(train.size() + val.size() + test.size()));

  o.order = EdgeSplitOrder::kRandom;
  o.seed = 3;
  ASSERT_TRUE(SplitEdges(shuffled, o).ok());
  const auto& rtrain = shuffled.edge_types[0].splits.at("train").time;
  const auto& rtest = shuffled.edge_types[0].splits.at("test").time;
  ASSERT_EQ(rtest.size(), static_cast<int64_t>(test.size()));
  EXPECT_LT(*std::min_element(rtest.span().begin(), rtest.span().end()),
            *std::max_element(rtrain.span().begin(), rtrain.span().end()))
      << "a random split mixes times";

  Graph untimed = RingGraph();
  o.order = EdgeSplitOrder::kTime;
  absl::Status s = SplitEdges(untimed, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("has no edge times"));
}

}  // namespace
}  // namespace graphshard::partitioner
