// TU-format graph-classification datasets: reading, writing, the generator, partitioning whole
// graphs.
#include "partitioner/tu_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/partition_part.h"
#include "partitioner/partition.h"
#include "partitioner/read_input.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::partitioner {
namespace {

using ::testing::HasSubstr;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

// Two graphs: a triangle (nodes 1-3) and a path 4 - 5; graph labels -1 and 1; node labels 1..3
// in one column; 2 attributes per node.
void WriteTinyTu(const std::string& dir) {
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/T_A.txt", "1, 2\n2, 1\n2, 3\n3, 2\n3, 1\n1, 3\n4, 5\n5, 4\n");
  WriteFile(dir + "/T_graph_indicator.txt", "1\n1\n1\n2\n2\n");
  WriteFile(dir + "/T_graph_labels.txt", "-1\n1\n");
  WriteFile(dir + "/T_node_labels.txt", "1\n2\n3\n1\n1\n");
  WriteFile(dir + "/T_node_attributes.txt", "0.5, 1\n1.5, 2\n2.5, 3\n3.5, 4\n4.5, 5\n");
}

TEST(TuDatasetTest, ReadsEveryFile) {
  testing::ScratchDir tmp;
  WriteTinyTu(tmp.Sub("t"));
  EXPECT_EQ(*DetectLayout(tmp.Sub("t")), "tu");
  auto d = ReadTuDataset(tmp.Sub("t"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->name, "T");
  EXPECT_EQ(d->num_nodes, 5);
  EXPECT_EQ(d->num_graphs(), 2);
  EXPECT_EQ(d->src, (std::vector<int64_t>{0, 1, 1, 2, 2, 0, 3, 4}));
  EXPECT_EQ(d->dst, (std::vector<int64_t>{1, 0, 2, 1, 0, 2, 4, 3}));
  EXPECT_EQ(d->graph_of_node, (std::vector<int64_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(d->graph_labels, (std::vector<int64_t>{-1, 1}));
  EXPECT_EQ(d->attr_dim, 2);
  EXPECT_EQ(d->node_attributes[9], 5.0f);

  auto g = GraphFromTu(*d, 3);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(IsGraphDataset(*g));
  const NodeTypeData& nodes = g->node_types[0];
  EXPECT_EQ(nodes.feat_dim, 2 + 3);  // attributes, then one-hot of labels 1..3
  EXPECT_EQ(std::vector<float>(nodes.features.span().begin(), nodes.features.span().begin() + 10),
            (std::vector<float>{0.5f, 1, 1, 0, 0, 1.5f, 2, 0, 1, 0}));
  const NodeTypeData& graphs = g->node_types[1];
  EXPECT_EQ(graphs.name, "graph");
  EXPECT_EQ(graphs.num_classes, 2);
  EXPECT_EQ(graphs.labels[0], 0);  // -1 -> 0, 1 -> 1
  EXPECT_EQ(graphs.labels[1], 1);
  ASSERT_EQ(g->edge_types.size(), 2u);
  EXPECT_EQ(g->edge_types[1].Name(), "node__in__graph");
  auto graph_of = GraphOfNode(*g);
  ASSERT_TRUE(graph_of.ok());
  EXPECT_EQ(*graph_of, d->graph_of_node);
}

TEST(TuDatasetTest, DegreeFeaturesAndSplitWithoutNodeFiles) {
  auto d = GenerateGraphs({.seed = 5, .num_graphs = 50, .min_nodes = 6, .max_nodes = 9});
  ASSERT_TRUE(d.ok()) << d.status();
  auto g = GraphFromTu(*d, 11);
  ASSERT_TRUE(g.ok()) << g.status();
  const NodeTypeData& nodes = g->node_types[0];
  ASSERT_EQ(nodes.feat_dim, kMaxDegreeFeature + 1);
  std::vector<int64_t> deg(static_cast<size_t>(d->num_nodes));
  for (int64_t v : d->dst) ++deg[v];
  for (int64_t v = 0; v < d->num_nodes; ++v) {
    EXPECT_EQ(nodes.features[v * nodes.feat_dim + deg[v]], 1.0f) << "node " << v;
  }
  const NodeTypeData& graphs = g->node_types[1];
  EXPECT_EQ(graphs.splits.at("train").size(), 40);
  EXPECT_EQ(graphs.splits.at("val").size(), 5);
  EXPECT_EQ(graphs.splits.at("test").size(), 5);
  std::set<int64_t> all;
  for (const auto& [name, ids] : graphs.splits) all.insert(ids.span().begin(), ids.span().end());
  EXPECT_EQ(all.size(), 50u);  // disjoint and complete
  auto other = GraphFromTu(*d, 12);
  EXPECT_NE(std::vector<int64_t>(other->node_types[1].splits.at("test").span().begin(),
                                 other->node_types[1].splits.at("test").span().end()),
            std::vector<int64_t>(graphs.splits.at("test").span().begin(),
                                 graphs.splits.at("test").span().end()));
}

TEST(TuDatasetTest, WriteReadRoundTrip) {
  testing::ScratchDir tmp;
  auto d = GenerateGraphs({.seed = 2, .num_graphs = 30});
  ASSERT_TRUE(d.ok());
  d->node_labels.assign(static_cast<size_t>(d->num_nodes), {7, 1});
  d->node_labels[3] = {8, 0};
  d->attr_dim = 1;
  for (int64_t v = 0; v < d->num_nodes; ++v) d->node_attributes.push_back(0.25f * v);
  ASSERT_TRUE(WriteTuDataset(*d, tmp.Sub("w")).ok());
  EXPECT_FALSE(WriteTuDataset(*d, tmp.Sub("w")).ok());  // never overwrites
  auto back = ReadTuDataset(tmp.Sub("w"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "GRAPHS");
  EXPECT_EQ(back->src, d->src);
  EXPECT_EQ(back->dst, d->dst);
  EXPECT_EQ(back->graph_of_node, d->graph_of_node);
  EXPECT_EQ(back->graph_labels, d->graph_labels);
  EXPECT_EQ(back->node_labels, d->node_labels);
  EXPECT_EQ(back->node_attributes, d->node_attributes);
}

TEST(TuDatasetTest, GeneratorIsDeterministicBalancedAndSameSizedPerClass) {
  auto a = GenerateGraphs({.seed = 9, .num_graphs = 200});
  auto b = GenerateGraphs({.seed = 9, .num_graphs = 200});
  auto c = GenerateGraphs({.seed = 10, .num_graphs = 200});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->src, b->src);
  EXPECT_NE(a->src, c->src);
  std::vector<int64_t> nodes(200), edges(200);
  for (int64_t g : a->graph_of_node) ++nodes[g];
  for (int64_t s : a->src) ++edges[a->graph_of_node[s]];
  int ones = 0;
  for (int g = 0; g < 200; ++g) {
    ones += static_cast<int>(a->graph_labels[g]);
    EXPECT_GE(nodes[g], 10);
    EXPECT_LE(nodes[g], 30);
    EXPECT_EQ(edges[g], 2 * (2 * nodes[g] - 3)) << "graph " << g;  // both directions
  }
  EXPECT_EQ(ones, 100);
  EXPECT_FALSE(GenerateGraphs({.num_graphs = 5}).ok());
  EXPECT_FALSE(GenerateGraphs({.min_nodes = 3}).ok());
}

struct BadCase {
  const char* file;
  const char* contents;
  const char* expect;
};

TEST(TuDatasetTest, MalformedFilesNameFileAndLine) {
  const BadCase cases[] = {
      {"T_A.txt", "1, 2\n2, 1\nx, 3\n", "T_A.txt:3: expected two node ids"},
      {"T_A.txt", "1, 2\n2, 9\n", "T_A.txt:2: node id outside 1..5"},
      {"T_A.txt", "1, 2\n3, 4\n", "T_A.txt:2: edge 3 -> 4 joins graph 1 and graph 2"},
      {"T_A.txt", "1, 2\n\n2, 1\n", "T_A.txt:2: empty line before more data"},
      {"T_graph_indicator.txt", "1\n1\n1\n3\n2\n", "T_graph_indicator.txt:4: graph 3 outside 1..2"},
      {"T_graph_indicator.txt", "1\n1\n1.5\n2\n2\n", "T_graph_indicator.txt:3: expected one integer"},
      {"T_graph_labels.txt", "", "T_graph_labels.txt: no graphs"},
      {"T_node_labels.txt", "1\n2\n3\n1\n", "T_node_labels.txt: 4 lines, expected 5"},
      {"T_node_labels.txt", "1\n2\n3, 4\n1\n1\n", "T_node_labels.txt:3: 2 columns"},
      {"T_node_attributes.txt", "1, 2\n1, 2\n1\n1, 2\n1, 2\n", "T_node_attributes.txt:3: 1 attributes"},
      {"T_node_attributes.txt", "1, 2\n1, 2\n1, zz\n1, 2\n1, 2\n", "T_node_attributes.txt:3: not a number"},
  };
  for (const BadCase& c : cases) {
    testing::ScratchDir tmp;
    WriteTinyTu(tmp.Sub("t"));
    WriteFile(tmp.Sub("t") + "/" + c.file, c.contents);
    auto d = ReadTuDataset(tmp.Sub("t"));
    ASSERT_FALSE(d.ok()) << c.file << ": " << c.contents;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(c.expect));
  }
  testing::ScratchDir tmp;
  WriteTinyTu(tmp.Sub("t"));
  std::filesystem::remove(tmp.Sub("t") + "/T_graph_labels.txt");
  auto d = ReadTuDataset(tmp.Sub("t"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("T_graph_labels.txt"));
}

TEST(TuDatasetTest, PartitionKeepsEveryGraphWholeInOnePart) {
  testing::ScratchDir tmp;
  auto d = GenerateGraphs({.seed = 4, .num_graphs = 60});
  ASSERT_TRUE(d.ok());
  auto g = GraphFromTu(*d, 1);
  ASSERT_TRUE(g.ok());
  PartitionOptions o;
  o.num_parts = 3;
  o.seed = 2;
  auto manifest = PartitionGraph(*g, o, tmp.Sub("p"));
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  int64_t graphs_seen = 0, nodes_seen = 0, edges_seen = 0;
  for (int p = 0; p < 3; ++p) {
    auto part = common::PartitionPart::Load(tmp.Sub("p"), p);
    ASSERT_TRUE(part.ok()) << part.status();
    const common::NodeShard* nodes = (*part)->FindNodes("node");
    const common::NodeShard* graphs = (*part)->FindNodes("graph");
    graphs_seen += graphs->num_rows();
    EXPECT_GE(graphs->num_rows(), 19);  // 60 graphs cut into 3 near-equal pieces
    EXPECT_LE(graphs->num_rows(), 21);
    // Each graph's nodes (its in-edges over node__in__graph) are owned by this part and are
    // exactly the input graph's nodes.
    const common::EdgeShard* member = (*part)->FindEdges("node__in__graph");
    for (int64_t row = 0; row < graphs->num_rows(); ++row) {
      const int64_t orig_graph = graphs->orig_ids[row];
      auto ids = member->csc.InNeighbors(row);
      int64_t expected = 0;
      for (int64_t gi : d->graph_of_node) expected += gi == orig_graph;
      EXPECT_EQ(std::ssize(ids), expected);
      for (int64_t v : ids) {
        ASSERT_GE(v, nodes->begin);
        ASSERT_LT(v, nodes->end);
        EXPECT_EQ(d->graph_of_node[nodes->orig_ids[v - nodes->begin]], orig_graph);
      }
      nodes_seen += std::ssize(ids);
    }
    // No edge crosses parts.
    const common::EdgeShard* edges = (*part)->FindEdges("node__to__node");
    for (int64_t row = 0; row < nodes->num_rows(); ++row) {
      for (int64_t v : edges->csc.InNeighbors(row)) {
        EXPECT_GE(v, nodes->begin);
        EXPECT_LT(v, nodes->end);
      }
    }
    edges_seen += edges->csc.num_edges();
  }
  EXPECT_EQ(graphs_seen, 60);
  EXPECT_EQ(nodes_seen, d->num_nodes);
  EXPECT_EQ(edges_seen, std::ssize(d->src));
  o.method = "metis";
  auto metis = PartitionGraph(*g, o, tmp.Sub("m"));
  ASSERT_FALSE(metis.ok());
  EXPECT_THAT(std::string(metis.status().message()), HasSubstr("whole graphs"));
}

}  // namespace
}  // namespace graphshard::partitioner
