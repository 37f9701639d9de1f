// Link-prediction epoch streams (types.h, LinkSampling) over in-process parts on an inline
// executor: the batch's supervision edges and their seeds, no target leakage (no sampled edge
// equals a positive of its batch, in either direction, though the graph holds them all),
// determinism of the negatives, degree-biased negatives, and the refusals. Temporal link
// streams (PyG's edge_label_time): every endpoint in its own tree at its edge's time, no
// sampled edge later than (strict: at) that time, no supervision edge in message passing.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/executor.h"
#include "partitioner/edge_split.h"
#include "partitioner/partition.h"
#include "server/engine/epoch_stream.h"
#include "tests/server/engine/in_process_parts.h"
#include "tests/testing/partition_fixture.h"
#include "tests/testing/temporal_fixture.h"

namespace graphshard::engine {
namespace {

using ::testing::HasSubstr;
using Pair = std::pair<int64_t, int64_t>;

constexpr char kEdgeType[] = "node__to__node";

// 60 nodes, each with 4 undirected neighbours, 2 features; 80/10/10 edge split; 2 parts.
absl::Status WriteLinkPartition(const std::string& out, bool split) {
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < 60; ++v) {
    for (int64_t k : {1, 7}) {
      src.push_back(v);
      dst.push_back((v + k) % 60);
    }
  }
  partitioner::Graph g = partitioner::HomogeneousGraph(60, src, dst);
  g.node_types[0].feat_dim = 2;
  std::vector<float> feat;
  for (int64_t v = 0; v < 60; ++v) feat.insert(feat.end(), {static_cast<float>(v), -1.0f});
  g.node_types[0].features = partitioner::Array<float>::Owned(feat);
  partitioner::EdgeTransformOptions undirected;
  undirected.undirected = true;
  if (absl::Status s = partitioner::TransformEdges(g, undirected); !s.ok()) return s;
  if (split) {
    partitioner::EdgeSplitOptions o;
    o.train = 0.8;
    o.val = 0.1;
    o.test = 0.1;
    o.seed = 2;
    if (absl::Status s = partitioner::SplitEdges(g, o); !s.ok()) return s;
  }
  partitioner::PartitionOptions po;
  po.num_parts = 2;
  po.seed = 1;
  return partitioner::PartitionGraph(g, po, out).status();
}

class LinkStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteLinkPartition(tmp_.Sub("p"), true).ok());
    auto parts = testing::LoadInProcessParts(tmp_.Sub("p"));
    ASSERT_TRUE(parts.ok()) << parts.status();
    parts_ = *std::move(parts);
    peers_ = parts_.Peers();
  }
  const LocalPart& local() const { return *parts_.parts[0]; }
  const common::EdgeSplitView& Split(const std::string& name) const {
    return local().part().FindEdges(kEdgeType)->splits.at(name);
  }
  StreamRequest Request(int neg_ratio = 2) const {
    StreamRequest r;
    for (int64_t i = 0; i < Split("train").size(); ++i) r.seeds.push_back(i);
    r.batch_size = 8;
    r.shuffle_seed = 11;
    r.epoch = 1;
    r.sampling.fanouts = {-1, 3};
    r.link.edge_type = kEdgeType;
    r.link.neg_ratio = neg_ratio;
    return r;
  }
  absl::StatusOr<std::unique_ptr<EpochStream>> Start(StreamRequest r) {
    return EpochStream::Start(local(), *peers_, executor_, std::move(r), /*prefetch=*/2);
  }
  std::vector<Minibatch> ReadAll(EpochStream& stream) {
    std::vector<Minibatch> out;
    while (true) {
      auto next = stream.Next();
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok() || !next->has_value()) return out;
      out.push_back(**std::move(next));
    }
  }
  // Whether the stored graph has the edge a -> b (some part owns b's in-edges).
  bool HasEdge(int64_t a, int64_t b) const {
    for (const auto& part : parts_.parts) {
      const common::EdgeShard* e = part->part().FindEdges(kEdgeType);
      const common::NodeShard* n = part->part().FindNodes("node");
      if (b < n->begin || b >= n->end) continue;
      for (int64_t s : e->csc.InNeighbors(b - n->begin)) {
        if (s == a) return true;
      }
    }
    return false;
  }

  testing::ScratchDir tmp_;
  testing::InProcessParts parts_;
  std::unique_ptr<InProcessPeers> peers_;
  common::InlineExecutor executor_;
};

TEST_F(LinkStreamTest, BatchHoldsPositivesThenNegativesOverHopZeroSeeds) {
  const StreamRequest r = Request(/*neg_ratio=*/2);
  auto stream = Start(r);
  ASSERT_TRUE(stream.ok()) << stream.status();
  const std::vector<Minibatch> batches = ReadAll(**stream);
  ASSERT_EQ(std::ssize(batches), (Split("train").size() + 7) / 8);
  std::set<Pair> positives_seen;
  for (size_t b = 0; b < batches.size(); ++b) {
    const Minibatch& m = batches[b];
    const LinkLabels& l = m.link;
    const NodeBlock& nodes = m.nodes[0];
    ASSERT_EQ(l.edge_type, kEdgeType);
    const auto n = static_cast<size_t>(l.num_pos);
    ASSERT_EQ(l.src.size(), 3 * n);
    ASSERT_EQ(l.label.size(), 3 * n);
    EXPECT_EQ(m.batch_size, std::ssize(l.src));
    const std::vector<int64_t> pos = BatchSeeds(ShuffledSeeds(r, 1), 8, static_cast<int64_t>(b));
    ASSERT_EQ(pos.size(), n);
    for (size_t i = 0; i < l.src.size(); ++i) {
      ASSERT_LT(l.src[i], nodes.num_sampled_nodes[0]) << "an endpoint is a hop-0 seed";
      ASSERT_LT(l.dst[i], nodes.num_sampled_nodes[0]);
      const int64_t s = nodes.ids[static_cast<size_t>(l.src[i])];
      const int64_t d = nodes.ids[static_cast<size_t>(l.dst[i])];
      if (i < n) {
        EXPECT_EQ(l.label[i], 1.0f);
        EXPECT_EQ(s, Split("train").src[static_cast<size_t>(pos[i])]);
        EXPECT_EQ(d, Split("train").dst[static_cast<size_t>(pos[i])]);
        positives_seen.insert({s, d});
      } else {
        EXPECT_EQ(l.label[i], 0.0f);
        EXPECT_EQ(l.src[i], l.src[i % n]) << "negative j of positive i shares its source";
      }
    }
  }
  EXPECT_EQ(std::ssize(positives_seen), Split("train").size()) << "every seed edge once";
}

TEST_F(LinkStreamTest, NoSampledEdgeIsASupervisionEdgeOfItsBatch) {
  StreamRequest r = Request(/*neg_ratio=*/1);
  r.sampling.fanouts = {-1, -1};  // every in-edge: what is missing was left out on purpose
  auto stream = Start(r);
  ASSERT_TRUE(stream.ok()) << stream.status();
  int64_t checked = 0;
  for (const Minibatch& m : ReadAll(**stream)) {
    const NodeBlock& nodes = m.nodes[0];
    std::set<Pair> positives;
    for (int64_t i = 0; i < m.link.num_pos; ++i) {
      const int64_t s = nodes.ids[static_cast<size_t>(m.link.src[static_cast<size_t>(i)])];
      const int64_t d = nodes.ids[static_cast<size_t>(m.link.dst[static_cast<size_t>(i)])];
      // The graph does hold them (train edges stay for message passing), both ways.
      ASSERT_TRUE(HasEdge(s, d) && HasEdge(d, s)) << s << " - " << d;
      positives.insert({s, d});
      positives.insert({d, s});
    }
    const EdgeBlock& e = m.edges[0];
    ASSERT_FALSE(e.src.empty());
    for (size_t k = 0; k < e.src.size(); ++k) {
      const Pair sampled{nodes.ids[static_cast<size_t>(e.src[k])],
                         nodes.ids[static_cast<size_t>(e.dst[k])]};
      EXPECT_EQ(positives.count(sampled), 0u)
          << "sampled edge " << sampled.first << " -> " << sampled.second << " is a target";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST_F(LinkStreamTest, BatchesAreAPureFunctionOfSeedEpochAndIndex) {
  StreamRequest r = Request();
  auto a = Start(r);
  auto b = Start(r);
  r.first_batch = 2;
  auto resumed = Start(r);
  ASSERT_TRUE(a.ok() && b.ok() && resumed.ok());
  const std::vector<Minibatch> x = ReadAll(**a), y = ReadAll(**b), z = ReadAll(**resumed);
  ASSERT_EQ(x.size(), y.size());
  ASSERT_EQ(z.size() + 2, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    testing::ExpectSameBatch(x[i], y[i]);
    EXPECT_EQ(x[i].link.src, y[i].link.src);
    EXPECT_EQ(x[i].link.dst, y[i].link.dst);
    if (i >= 2) {
      testing::ExpectSameBatch(x[i], z[i - 2]);
      EXPECT_EQ(x[i].link.dst, z[i - 2].link.dst);
    }
  }
  // Another epoch draws other negatives.
  r.first_batch = 0;
  r.epoch = 2;
  auto other = Start(r);
  ASSERT_TRUE(other.ok());
  const std::vector<Minibatch> w = ReadAll(**other);
  bool differs = false;
  for (size_t i = 0; i < w.size(); ++i) differs = differs || w[i].nodes[0].ids != x[i].nodes[0].ids;
  EXPECT_TRUE(differs);
}

TEST_F(LinkStreamTest, DegreeBiasedNegativesHaveTrainingEdges) {
  StreamRequest r = Request(/*neg_ratio=*/5);
  r.link.neg_sampling = NegativeSampling::kDegree;
  auto stream = Start(r);
  ASSERT_TRUE(stream.ok()) << stream.status();
  const auto degree = local().part().FindEdges(kEdgeType)->dst_degree;
  int64_t negatives = 0;
  for (const Minibatch& m : ReadAll(**stream)) {
    for (size_t i = static_cast<size_t>(m.link.num_pos); i < m.link.dst.size(); ++i) {
      const int64_t d = m.nodes[0].ids[static_cast<size_t>(m.link.dst[i])];
      EXPECT_GT(degree[static_cast<size_t>(d)], 0) << d;
      ++negatives;
    }
  }
  EXPECT_GT(negatives, 0);
}

TEST_F(LinkStreamTest, RefusesNamingWhatIsMissing) {
  StreamRequest r = Request();
  r.link.edge_type = "node__likes__node";
  auto s = Start(r);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("no edge type 'node__likes__node'"));
  r = Request();
  r.link.split = "holdout";
  EXPECT_THAT(Start(r).status().message(), HasSubstr("no edge split 'holdout'"));
  r = Request();
  r.seeds.push_back(Split("train").size());
  EXPECT_THAT(Start(r).status().message(), HasSubstr("outside the"));
  r = Request();
  r.seeds.push_back(0);
  EXPECT_THAT(Start(r).status().message(), HasSubstr("twice"));
  r = Request(/*neg_ratio=*/1001);
  EXPECT_THAT(Start(r).status().message(), HasSubstr("neg_ratio"));

  // A partition without edge splits.
  ASSERT_TRUE(WriteLinkPartition(tmp_.Sub("q"), false).ok());
  auto plain = testing::LoadInProcessParts(tmp_.Sub("q"));
  ASSERT_TRUE(plain.ok());
  auto peers = plain->Peers();
  auto refused = EpochStream::Start(*plain->parts[0], *peers, executor_, Request(), 1);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("--edge-split"));
}

// A directed graph with node and edge times (few distinct times: ties), split chronologically
// 70/10/20, in 2 parts.
class TemporalLinkStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = testing::TemporalTestGraph(200, 8, 30, /*seed=*/9);
    edge_time_ = testing::EdgeTimeOf(graph_);
    for (const auto& [edge, time] : edge_time_) in_times_[edge.second].push_back(time);
    partitioner::EdgeSplitOptions o;
    o.train = 0.7;
    o.val = 0.1;
    o.test = 0.2;
    ASSERT_TRUE(partitioner::SplitEdges(graph_, o).ok());
    auto parts = PartitionInTwo("p");
    ASSERT_TRUE(parts.ok()) << parts.status();
    parts_ = *std::move(parts);
    peers_ = parts_.Peers();
  }
  // graph_ in 2 random parts under tmp_/name, loaded in this process.
  absl::StatusOr<testing::InProcessParts> PartitionInTwo(const std::string& name) {
    partitioner::PartitionOptions po;
    po.num_parts = 2;
    po.seed = 1;
    absl::Status written = partitioner::PartitionGraph(graph_, po, tmp_.Sub(name)).status();
    if (!written.ok()) return written;
    return testing::LoadInProcessParts(tmp_.Sub(name));
  }
  StreamRequest Request(const std::string& split, TemporalMode mode) const {
    StreamRequest r;
    const auto& view = parts_.parts[0]->part().FindEdges(kEdgeType)->splits.at(split);
    for (int64_t i = 0; i < view.size(); ++i) r.seeds.push_back(i);
    r.batch_size = 16;
    r.shuffle_seed = 4;
    r.sampling.fanouts = {-1, -1};  // every eligible in-edge: the check sees all of them
    r.sampling.temporal = mode;
    r.link.edge_type = kEdgeType;
    r.link.split = split;
    r.link.neg_ratio = 2;
    return r;
  }
  std::vector<Minibatch> ReadAll(StreamRequest r) {
    auto stream = EpochStream::Start(*parts_.parts[0], *peers_, executor_, std::move(r), 2);
    EXPECT_TRUE(stream.ok()) << stream.status();
    std::vector<Minibatch> out;
    while (stream.ok()) {
      auto next = (*stream)->Next();
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok() || !next->has_value()) break;
      out.push_back(**std::move(next));
    }
    return out;
  }
  // The input id of row `row` of block `n`.
  int64_t Orig(const NodeBlock& n, int64_t row) const {
    return parts_.orig_of[static_cast<size_t>(n.ids[static_cast<size_t>(row)])];
  }

  struct Checked {
    int64_t edges = 0, later = 0, same_time = 0, unknown = 0, positives_sampled = 0;
    int64_t later_in_graph = 0;  // in-edges of hop-0 nodes later than their tree's time
  };
  Checked Check(const std::vector<Minibatch>& batches) {
    Checked c;
    for (const Minibatch& m : batches) {
      const NodeBlock& n = m.nodes[0];
      const auto P = m.link.num_pos;
      const auto M = static_cast<int64_t>(m.link.src.size());
      EXPECT_EQ(n.tree.size(), n.ids.size()) << "temporal link batches are disjoint";
      // Each tree's time: the time of its supervision edge's positive (input edge times).
      std::vector<int64_t> tree_time(static_cast<size_t>(P + M), -1);
      std::set<Pair> positives;
      for (int64_t k = 0; k < M; ++k) {
        const int64_t s_row = m.link.src[static_cast<size_t>(k)];
        const int64_t d_row = m.link.dst[static_cast<size_t>(k)];
        EXPECT_EQ(n.tree[static_cast<size_t>(s_row)], k % P) << "source tree";
        EXPECT_EQ(n.tree[static_cast<size_t>(d_row)], P + k) << "destination tree";
        const int64_t i = k % P;
        const int64_t ps = Orig(n, m.link.src[static_cast<size_t>(i)]);
        const int64_t pd = Orig(n, m.link.dst[static_cast<size_t>(i)]);
        const int64_t t = edge_time_.at({ps, pd});
        tree_time[static_cast<size_t>(P + k)] = t;
        if (k < P) {
          tree_time[static_cast<size_t>(k)] = t;
          positives.insert({ps, pd});
          positives.insert({pd, ps});
        }
      }
      for (size_t row = 0; row < static_cast<size_t>(n.num_sampled_nodes[0]); ++row) {
        const int64_t t = tree_time[static_cast<size_t>(n.tree[row])];
        for (int64_t x : in_times_[Orig(n, static_cast<int64_t>(row))]) {
          c.later_in_graph += x > t ? 1 : 0;
        }
      }
      const EdgeBlock& e = m.edges[0];
      for (size_t k = 0; k < e.src.size(); ++k) {
        ++c.edges;
        const Pair edge{Orig(n, e.src[k]), Orig(n, e.dst[k])};
        EXPECT_EQ(n.tree[static_cast<size_t>(e.src[k])], n.tree[static_cast<size_t>(e.dst[k])]);
        c.positives_sampled += positives.count(edge);
        auto it = edge_time_.find(edge);
        if (it == edge_time_.end()) {
          ++c.unknown;
          continue;
        }
        const int64_t t = tree_time[static_cast<size_t>(n.tree[static_cast<size_t>(e.dst[k])])];
        c.later += it->second > t ? 1 : 0;
        c.same_time += it->second == t ? 1 : 0;
      }
    }
    return c;
  }

  testing::ScratchDir tmp_;
  partitioner::Graph graph_;
  std::map<Pair, int64_t> edge_time_;
  std::map<int64_t, std::vector<int64_t>> in_times_;  // input dst -> its in-edges' times
  testing::InProcessParts parts_;
  std::unique_ptr<InProcessPeers> peers_;
  common::InlineExecutor executor_;
};

TEST_F(TemporalLinkStreamTest, NoSampledEdgeIsLaterThanItsTreesSeedEdge) {
  for (const char* split : {"train", "test"}) {
    const std::vector<Minibatch> batches = ReadAll(Request(split, TemporalMode::kAtOrBefore));
    ASSERT_FALSE(batches.empty()) << split;
    const Checked c = Check(batches);
    EXPECT_GT(c.edges, 100) << split;
    EXPECT_EQ(c.unknown, 0) << split;
    EXPECT_EQ(c.later, 0) << split;
    EXPECT_EQ(c.positives_sampled, 0) << split << ": a supervision edge passed messages";
    EXPECT_GT(c.same_time, 0) << split << ": ties at the seed time are eligible (<=)";
    EXPECT_GT(c.later_in_graph, 0) << split << ": the times must make the test meaningful";
  }
}

TEST_F(TemporalLinkStreamTest, StrictModeExcludesEdgesAtTheSeedTime) {
  const Checked c = Check(ReadAll(Request("train", TemporalMode::kBefore)));
  EXPECT_GT(c.edges, 100);
  EXPECT_EQ(c.unknown, 0);
  EXPECT_EQ(c.later, 0);
  EXPECT_EQ(c.same_time, 0);
  EXPECT_EQ(c.positives_sampled, 0);
}

TEST_F(TemporalLinkStreamTest, SplitsWithoutTimesAreRefusedNamingTheFile) {
  // Edge times, but supervision edges without them (a folder written before splits had times).
  for (auto& [name, split] : graph_.edge_types[0].splits) split.time = {};
  auto parts = PartitionInTwo("old");
  ASSERT_TRUE(parts.ok()) << parts.status();
  auto peers = parts->Peers();
  auto s = EpochStream::Start(*parts->parts[0], *peers, executor_,
                              Request("train", TemporalMode::kAtOrBefore), 1);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(),
              HasSubstr("part_0/edge_splits/node__to__node/train_time.npy"));
  // Without temporal sampling the same folder serves link batches.
  EXPECT_TRUE(EpochStream::Start(*parts->parts[0], *peers, executor_,
                                 Request("train", TemporalMode::kOff), 1)
                  .ok());
}

}  // namespace
}  // namespace graphshard::engine
