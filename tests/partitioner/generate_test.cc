#include "partitioner/generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/partition_part.h"
#include "partitioner/partition.h"
#include "partitioner/read_input.h"
#include "partitioner/write_input.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::partitioner {
namespace {

GenerateOptions Small(uint64_t seed) {
  GenerateOptions o;
  o.seed = seed;
  o.num_nodes = 3000;
  o.avg_degree = 10;
  o.num_features = 16;
  o.num_classes = 5;
  return o;
}

TEST(GenerateTest, DeterministicFromSeed) {
  auto a = Generate(Small(1));
  auto b = Generate(Small(1));
  auto c = Generate(Small(2));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->edge_types[0].src_ids.ToVector(), b->edge_types[0].src_ids.ToVector());
  EXPECT_EQ(a->edge_types[0].dst_ids.ToVector(), b->edge_types[0].dst_ids.ToVector());
  const NodeTypeData &x = a->node_types[0], &y = b->node_types[0];
  EXPECT_EQ(x.features.ToVector(), y.features.ToVector());
  EXPECT_EQ(x.labels.ToVector(), y.labels.ToVector());
  for (const char* split : {"train", "val", "test"}) {
    EXPECT_EQ(x.splits.at(split).ToVector(), y.splits.at(split).ToVector()) << split;
  }
  EXPECT_NE(a->edge_types[0].src_ids.ToVector(), c->edge_types[0].src_ids.ToVector());
}

TEST(GenerateTest, SimpleGraphWithPlantedCommunities) {
  auto g = Generate(Small(3));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(ValidateGraph(*g).ok());
  ASSERT_TRUE(g->IsHomogeneous());
  const NodeTypeData& nodes = g->node_types[0];
  const EdgeTypeData& edges = g->edge_types[0];
  EXPECT_EQ(edges.num_edges(), 3000 * 10 / 2);
  std::set<std::pair<int64_t, int64_t>> seen;
  std::vector<int64_t> degree(3000, 0);
  int64_t intra = 0;
  for (int64_t e = 0; e < edges.num_edges(); ++e) {
    int64_t a = edges.src_ids[e], b = edges.dst_ids[e];
    ASSERT_NE(a, b) << "self loop";
    ASSERT_TRUE(seen.insert({std::min(a, b), std::max(a, b)}).second) << "repeated edge";
    ++degree[a];
    ++degree[b];
    intra += nodes.labels[a] == nodes.labels[b] ? 1 : 0;
  }
  // 80% intra by construction plus 1/5 of the rest by chance: ~84%.
  EXPECT_GT(static_cast<double>(intra) / static_cast<double>(edges.num_edges()), 0.75);
  // Power-law-ish: the busiest node has many times the mean degree of 10.
  EXPECT_GT(*std::max_element(degree.begin(), degree.end()), 80);
  EXPECT_EQ(nodes.splits.at("train").size(), 1800);
  EXPECT_EQ(nodes.splits.at("val").size(), 600);
  EXPECT_EQ(nodes.splits.at("test").size(), 600);
}

TEST(GenerateTest, RejectsBadSizes) {
  GenerateOptions o = Small(1);
  o.kind = "mag";
  EXPECT_FALSE(Generate(o).ok());
  o = Small(1);
  o.num_nodes = 1;
  EXPECT_FALSE(Generate(o).ok());
  o = Small(1);
  o.avg_degree = 5000;
  EXPECT_FALSE(Generate(o).ok());
  o = Small(1);
  o.num_classes = 0;
  EXPECT_FALSE(Generate(o).ok());
}

TEST(GenerateTest, WrittenFilesAreIdenticalAndPartition) {
  testing::ScratchDir tmp;
  auto g = Generate(Small(9));
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(WriteOgbHomogeneous(*g, tmp.Sub("a")).ok());
  ASSERT_TRUE(WriteOgbHomogeneous(*g, tmp.Sub("b")).ok());
  for (const char* rel : {"raw/edge.csv.gz", "raw/node-feat.csv.gz", "raw/node-label.csv.gz",
                          "split/random/train.csv.gz"}) {
    auto x = testing::ReadGz(tmp.Sub("a/") + rel);
    auto y = testing::ReadGz(tmp.Sub("b/") + rel);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(*x, *y) << rel;
  }
  OgbReadOptions read;
  read.undirected = true;
  auto back = ReadOgbHomogeneous(tmp.Sub("a"), read);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->TotalEdges(), 2 * g->TotalEdges());
  EXPECT_EQ(back->node_types[0].features.ToVector(), g->node_types[0].features.ToVector())
      << "floats survive the text round trip";
  PartitionOptions options;
  options.num_parts = 3;
  ASSERT_TRUE(PartitionGraph(*back, options, tmp.Sub("parts")).ok());
  for (int p = 0; p < 3; ++p) {
    auto part = common::PartitionPart::Load(tmp.Sub("parts"), p);
    EXPECT_TRUE(part.ok()) << part.status();
  }
}

}  // namespace
}  // namespace graphshard::partitioner
