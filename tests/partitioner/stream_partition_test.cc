// --method stream: edge cut against random on planted communities (ids shuffled or stored as
// ranges), the balance caps, thread independence, heterogeneous graphs, the folder it writes,
// and what it refuses.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/partition_part.h"
#include "common/rng.h"
#include "partitioner/generate.h"
#include "partitioner/inspect.h"
#include "partitioner/partition.h"
#include "partitioner/tu_dataset.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::partitioner {
namespace {

using ::testing::HasSubstr;
using Parts = std::vector<std::vector<int>>;

PartitionOptions Options(const std::string& method, int parts, int threads = 2) {
  PartitionOptions o;
  o.method = method;
  o.num_parts = parts;
  o.seed = 5;
  o.threads = threads;
  return o;
}

Graph Products(int64_t nodes) {
  GenerateOptions o;
  o.seed = 3;
  o.num_nodes = nodes;
  o.avg_degree = 10;
  o.num_classes = 8;
  o.num_features = 4;
  auto g = Generate(o);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph{};
}

Parts Assign(const Graph& g, const PartitionOptions& o) {
  auto parts = AssignGraphParts(g, o);
  EXPECT_TRUE(parts.ok()) << parts.status();
  return parts.ok() ? *std::move(parts) : Parts{};
}

// Fraction of the edges (all types) whose endpoints lie in different parts.
double EdgeCut(const Graph& g, const Parts& parts) {
  int64_t cut = 0, total = 0;
  for (const EdgeTypeData& t : g.edge_types) {
    const std::vector<int>& src = parts[g.NodeTypeIndex(t.src)];
    const std::vector<int>& dst = parts[g.NodeTypeIndex(t.dst)];
    for (int64_t e = 0; e < t.num_edges(); ++e) {
      cut += src[t.src_ids[e]] != dst[t.dst_ids[e]] ? 1 : 0;
    }
    total += t.num_edges();
  }
  return total > 0 ? static_cast<double>(cut) / total : 0;
}

struct Balance {
  double nodes = 0;  // max part / mean part, all node types
  double train = 0;  // the same for training nodes
};

Balance MeasureBalance(const Graph& g, const Parts& parts, int num_parts) {
  std::vector<int64_t> nodes(num_parts, 0), train(num_parts, 0);
  int64_t total_train = 0;
  for (size_t t = 0; t < parts.size(); ++t) {
    for (int p : parts[t]) ++nodes[p];
    auto it = g.node_types[t].splits.find("train");
    if (it == g.node_types[t].splits.end()) continue;
    for (int64_t id : it->second.span()) ++train[parts[t][id]];
    total_train += it->second.size();
  }
  Balance b;
  b.nodes = static_cast<double>(*std::max_element(nodes.begin(), nodes.end())) * num_parts /
            static_cast<double>(g.TotalNodes());
  b.train = total_train == 0 ? 1
                             : static_cast<double>(*std::max_element(train.begin(), train.end())) *
                                   num_parts / static_cast<double>(total_train);
  return b;
}

// 20 k nodes, 8 planted communities (80% of edges inside one), 4 parts. Measured: random cuts
// 75.0% of the edges, stream 15.1% (node balance 1.002, train 1.011); 15% is the floor, every
// community whole in one part. Doing nothing would leave random's cut; 4 passes alone reach
// only about 60%.
TEST(StreamPartitionTest, CutsFarFewerEdgesThanRandomOnPlantedCommunities) {
  const Graph g = Products(20000);
  const Parts random = Assign(g, Options("random", 4));
  const Parts stream = Assign(g, Options("stream", 4));
  ASSERT_EQ(stream.size(), 1u);
  ASSERT_EQ(stream[0].size(), 20000u);
  const double random_cut = EdgeCut(g, random), stream_cut = EdgeCut(g, stream);
  EXPECT_GT(random_cut, 0.70);
  EXPECT_LT(stream_cut, random_cut - 0.40) << "random " << random_cut;
  EXPECT_LT(stream_cut, 0.25);
  const Balance b = MeasureBalance(g, stream, 4);
  EXPECT_LE(b.nodes, 1.05 + 0.002);
  EXPECT_LE(b.train, 1.05 + 0.002);
}

// Communities stored as id ranges (crawl or class order), 8 of 2,500 ids, 200 k edges, 80%
// inside: measured 15.1% cut (random 75%). Walked in id order instead of the strided order,
// the walk met the ranges one after another and stayed at 54.8%.
TEST(StreamPartitionTest, FindsCommunitiesStoredAsIdRanges) {
  const int64_t n = 20000, block = 2500;
  common::SplitMix64 rng(11);
  std::vector<int64_t> src, dst;
  for (int e = 0; e < 200000; ++e) {
    const int64_t u = static_cast<int64_t>(rng.Below(n));
    const bool inside = rng.Uniform() < 0.8;
    src.push_back(u);
    dst.push_back(inside ? u / block * block + static_cast<int64_t>(rng.Below(block))
                         : static_cast<int64_t>(rng.Below(n)));
  }
  const Graph g = HomogeneousGraph(n, src, dst);
  const double cut = EdgeCut(g, Assign(g, Options("stream", 4)));
  EXPECT_LT(cut, 0.25);
  EXPECT_GT(EdgeCut(g, Assign(g, Options("random", 4))), 0.70);
}

TEST(StreamPartitionTest, SameResultForAnyThreadCount) {
  const Graph g = Products(5000);
  const Parts one = Assign(g, Options("stream", 3, 1));
  EXPECT_EQ(one, Assign(g, Options("stream", 3, 4)));
  EXPECT_EQ(one, Assign(g, Options("stream", 3, 1)));
  PartitionOptions other_seed = Options("stream", 3, 1);
  other_seed.seed = 6;
  EXPECT_NE(one, Assign(g, other_seed));
}

// Every node wants the same part (a clique): the caps alone spread them, per class.
TEST(StreamPartitionTest, CapsHoldWhenEveryNodeWantsOnePart) {
  std::vector<int64_t> src, dst;
  const int64_t n = 300;
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t v = 0; v < n; ++v) {
      if (u == v) continue;
      src.push_back(u);
      dst.push_back(v);
    }
  }
  Graph g = HomogeneousGraph(n, src, dst);
  std::vector<int64_t> train;
  for (int64_t v = 0; v < n; v += 3) train.push_back(v);
  g.node_types[0].splits["train"] = Array<int64_t>::Owned(train);
  for (int parts : {2, 3, 7}) {
    const Balance b = MeasureBalance(g, Assign(g, Options("stream", parts)), parts);
    // ceil(1.05 x class / K) per class: within 5% plus one node per class and part.
    EXPECT_LE(b.nodes, 1.05 + 2.0 * parts / n) << parts;
    EXPECT_LE(b.train, 1.05 + 1.0 * parts / train.size()) << parts;
  }
}

TEST(StreamPartitionTest, HeterogeneousGraphGetsEveryNodeAValidPartAndALowerCut) {
  GenerateOptions o;
  o.kind = "mag";
  o.seed = 2;
  o.num_nodes = 1500;
  o.num_features = 4;
  auto g = GenerateMag(o);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->node_types.size(), 4u);
  const Parts stream = Assign(*g, Options("stream", 3));
  ASSERT_EQ(stream.size(), g->node_types.size());
  for (size_t t = 0; t < stream.size(); ++t) {
    ASSERT_EQ(static_cast<int64_t>(stream[t].size()), g->node_types[t].num_nodes);
    for (int p : stream[t]) ASSERT_TRUE(p >= 0 && p < 3) << g->node_types[t].name;
  }
  // Measured: random 66.7%, stream 24.4%.
  const double random_cut = EdgeCut(*g, Assign(*g, Options("random", 3)));
  EXPECT_LT(EdgeCut(*g, stream), random_cut - 0.20) << "random " << random_cut;
  EXPECT_LE(MeasureBalance(*g, stream, 3).train, 1.05 + 0.01);
}

TEST(StreamPartitionTest, WritesAFolderThatLoads) {
  const Graph g = Products(3000);
  testing::ScratchDir tmp;
  auto m = PartitionGraph(g, Options("stream", 3), tmp.Sub("s"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->method, "stream");
  for (int p = 0; p < 3; ++p) {
    auto part = common::PartitionPart::Load(tmp.Sub("s"), p);
    ASSERT_TRUE(part.ok()) << part.status();
  }
  auto stats = InspectPartition(tmp.Sub("s"));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->total_nodes, g.TotalNodes());
  EXPECT_EQ(stats->total_edges, g.TotalEdges());
  EXPECT_LT(stats->remote_fraction, 0.5);
  EXPECT_LE(stats->train_balance, 1.05 + 0.01);
}

TEST(StreamPartitionTest, RefusesGraphDatasetsAndZeroPasses) {
  GraphsGenerateOptions go;
  go.seed = 1;
  go.num_graphs = 20;
  auto d = GenerateGraphs(go);
  ASSERT_TRUE(d.ok()) << d.status();
  auto g = GraphFromTu(*d, 1);
  ASSERT_TRUE(g.ok()) << g.status();
  auto parts = AssignGraphParts(*g, Options("stream", 2));
  EXPECT_EQ(parts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parts.status().message()), HasSubstr("whole graphs"));

  PartitionOptions o = Options("stream", 2);
  o.stream_passes = 0;
  EXPECT_EQ(AssignGraphParts(Products(100), o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StreamPartitionTest, MetisTooLargeErrorSuggestsStream) {
  // As in MetisTest.TooManyEdgesSuggestsRandom: a view claiming 2^31 edges, never read.
  Graph g;
  NodeTypeData& t = g.node_types.emplace_back();
  t.name = "node";
  t.num_nodes = 10;
  EdgeTypeData& e = g.edge_types.emplace_back();
  e.src = e.dst = "node";
  e.rel = "to";
  static const int64_t kOne = 0;
  e.src_ids = e.dst_ids = Array<int64_t>::View(absl::Span<const int64_t>(&kOne, size_t{1} << 31));
  auto parts = AssignGraphParts(g, Options("metis", 2));
  EXPECT_THAT(std::string(parts.status().message()), HasSubstr("--method stream"));
}

}  // namespace
}  // namespace graphshard::partitioner
