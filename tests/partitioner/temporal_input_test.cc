// Node and edge times in the input (.npy folders) and in the partition folder (temporal
// sampling): read, carried through --undirected, written per part aligned with edge_id and
// sorted by time within each destination, derived from source node times where an edge type
// has none; malformed time files named.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "common/npy.h"
#include "common/partition_part.h"
#include "partitioner/partition.h"
#include "partitioner/read_input.h"
#include "partitioner/write_input.h"
#include "tests/testing/partition_fixture.h"
#include "tests/testing/temporal_fixture.h"

namespace graphshard::partitioner {
namespace {

using ::testing::HasSubstr;

std::vector<int64_t> Vec(const Array<int64_t>& a) { return {a.span().begin(), a.span().end()}; }

TEST(TemporalInputTest, NpyFolderTimesReachEveryPartSortedAndAligned) {
  const Graph g = testing::TemporalTestGraph(120, 6, 30, 2);
  testing::ScratchDir tmp;
  ASSERT_TRUE(WriteNpyInput(g, tmp.Sub("npy")).ok());
  auto read = ReadGraph(tmp.Sub("npy"), {});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(Vec(read->node_types[0].time), Vec(g.node_types[0].time));
  EXPECT_EQ(Vec(read->edge_types[0].time), Vec(g.edge_types[0].time));
  ASSERT_TRUE(PartitionGraph(*read, {.num_parts = 3, .seed = 4}, tmp.Sub("parts")).ok());
  int64_t edges = 0;
  for (int p = 0; p < 3; ++p) {
    auto part = common::PartitionPart::Load(tmp.Sub("parts"), p);
    ASSERT_TRUE(part.ok()) << part.status();
    const common::NodeShard& n = *(*part)->FindNodes("node");
    ASSERT_TRUE(n.has_time);
    for (int64_t r = 0; r < n.num_rows(); ++r) {
      EXPECT_EQ(n.time[r], g.node_types[0].time[n.orig_ids[r]]);
    }
    const common::EdgeShard& e = *(*part)->FindEdges("node__to__node");
    ASSERT_TRUE(e.has_time);
    ASSERT_EQ(std::ssize(e.time), e.csc.num_edges());
    for (int64_t i = 0; i < e.csc.num_edges(); ++i) {
      EXPECT_EQ(e.time[i], g.edge_types[0].time[e.edge_ids[i]]);
    }
    for (int64_t v = 0; v < n.num_rows(); ++v) {
      EXPECT_TRUE(std::is_sorted(e.time.begin() + e.csc.EdgeBegin(v),
                                 e.time.begin() + e.csc.EdgeEnd(v)));
    }
    edges += e.csc.num_edges();
  }
  EXPECT_EQ(edges, g.edge_types[0].num_edges());
}

TEST(TemporalInputTest, UndirectedKeepsEachEdgesTime) {
  Graph g = testing::TemporalTestGraph(30, 2, 100, 3);
  const std::vector<int64_t> time = Vec(g.edge_types[0].time);
  const std::vector<int64_t> src = Vec(g.edge_types[0].src_ids), dst = Vec(g.edge_types[0].dst_ids);
  ASSERT_TRUE(TransformEdges(g, {.undirected = true}).ok());
  const EdgeTypeData& e = g.edge_types[0];
  ASSERT_EQ(e.time.size(), e.num_edges());
  for (int64_t i = 0; i < e.num_edges(); ++i) {
    bool found = false;
    for (size_t j = 0; j < src.size() && !found; ++j) {
      found = time[j] == e.time[i] && ((src[j] == e.src_ids[i] && dst[j] == e.dst_ids[i]) ||
                                       (src[j] == e.dst_ids[i] && dst[j] == e.src_ids[i]));
    }
    EXPECT_TRUE(found) << "edge " << i << " has a time of no input edge between its ends";
  }
}

TEST(TemporalInputTest, EdgesWithoutTimesTakeTheirSourcesNodeTime) {
  // user -rates-> item with edge times; item -in-> genre untimed, but items have node times.
  Graph g;
  for (const char* name : {"user", "item", "genre"}) {
    NodeTypeData& t = g.node_types.emplace_back();
    t.name = name;
    t.num_nodes = 4;
  }
  g.node_types[1].time = Array<int64_t>::Owned({40, 10, 30, 20});
  EdgeTypeData& rates = g.edge_types.emplace_back();
  rates.src = "user", rates.rel = "rates", rates.dst = "item";
  rates.src_ids = Array<int64_t>::Owned({0, 1, 2, 3});
  rates.dst_ids = Array<int64_t>::Owned({0, 0, 0, 0});
  rates.time = Array<int64_t>::Owned({9, 7, 8, 6});
  EdgeTypeData& in = g.edge_types.emplace_back();
  in.src = "item", in.rel = "in", in.dst = "genre";
  in.src_ids = Array<int64_t>::Owned({0, 1, 2, 3});
  in.dst_ids = Array<int64_t>::Owned({0, 0, 0, 0});
  testing::ScratchDir tmp;
  ASSERT_TRUE(WriteNpyInput(g, tmp.Sub("npy")).ok());
  auto read = ReadGraph(tmp.Sub("npy"), {});
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(PartitionGraph(*read, {.num_parts = 1}, tmp.Sub("parts")).ok());
  auto part = common::PartitionPart::Load(tmp.Sub("parts"), 0);
  ASSERT_TRUE(part.ok()) << part.status();
  const common::EdgeShard& r = *(*part)->FindEdges("user__rates__item");
  EXPECT_EQ(std::vector<int64_t>(r.time.begin(), r.time.end()), (std::vector<int64_t>{6, 7, 8, 9}));
  const common::EdgeShard& i = *(*part)->FindEdges("item__in__genre");
  ASSERT_TRUE(i.has_time);
  EXPECT_EQ(std::vector<int64_t>(i.time.begin(), i.time.end()),
            (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_FALSE((*part)->FindNodes("user")->has_time);
  EXPECT_TRUE((*part)->FindNodes("item")->has_time);
}

TEST(TemporalInputTest, MalformedTimeFilesAreNamed) {
  const Graph g = testing::TemporalTestGraph(20, 2, 10, 1);
  testing::ScratchDir tmp;
  ASSERT_TRUE(WriteNpyInput(g, tmp.Sub("npy")).ok());
  const std::vector<int64_t> short_times = {1, 2, 3};
  ASSERT_TRUE(common::WriteNpy<int64_t>(tmp.Sub("npy/edge_time.npy"), {3}, short_times).ok());
  auto read = ReadGraph(tmp.Sub("npy"), {});
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("edge_time.npy"));
  EXPECT_THAT(read.status().message(), HasSubstr("[40]"));

  ASSERT_TRUE(common::WriteNpy<int64_t>(tmp.Sub("npy/edge_time.npy"), {40},
                                        Vec(g.edge_types[0].time))
                  .ok());
  ASSERT_TRUE(common::WriteNpy<int64_t>(tmp.Sub("npy/node_time.npy"), {3}, short_times).ok());
  read = ReadGraph(tmp.Sub("npy"), {});
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("node_time.npy"));

  Graph hetero = g;
  hetero.edge_types[0].rel = "cites";
  testing::ScratchDir tmp2;
  ASSERT_TRUE(WriteNpyInput(hetero, tmp2.Sub("npy")).ok());
  ASSERT_TRUE(common::WriteNpy<int64_t>(tmp2.Sub("npy/edge_time__node__likes__node.npy"), {3},
                                        short_times)
                  .ok());
  read = ReadGraph(tmp2.Sub("npy"), {});
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("edge_time__node__likes__node.npy"));
}

}  // namespace
}  // namespace graphshard::partitioner
