#include "partitioner/partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "common/file_util.h"
#include "common/partition_part.h"
#include "partitioner/read_input.h"
#include "tests/testing/partition_fixture.h"
#include "tests/testing/source_paths.h"

namespace graphshard::partitioner {
namespace {

const std::string kCora = testing::SourceDir() + "/tests/data/cora";

Graph ReadCora(bool undirected) {
  OgbReadOptions options;
  options.undirected = undirected;
  auto g = ReadOgbHomogeneous(kCora, options);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph{};
}

// Relative path -> bytes of every file under `dir`.
std::map<std::string, std::string> ReadTree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto bytes = common::ReadFileToString(e.path().string());
    EXPECT_TRUE(bytes.ok());
    out[std::filesystem::relative(e.path(), dir).string()] = bytes.ok() ? *bytes : "";
  }
  return out;
}

class CoraPartitionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graph_ = new Graph(ReadCora(/*undirected=*/true));
    tmp_ = new testing::ScratchDir();
    PartitionOptions options;
    options.num_parts = 2;
    options.seed = 42;
    auto m = PartitionGraph(*graph_, options, tmp_->Sub("cora2"));
    ASSERT_TRUE(m.ok()) << m.status();
  }
  static void TearDownTestSuite() {
    delete tmp_;
    delete graph_;
  }
  static Graph* graph_;
  static testing::ScratchDir* tmp_;
};
Graph* CoraPartitionTest::graph_ = nullptr;
testing::ScratchDir* CoraPartitionTest::tmp_ = nullptr;

TEST_F(CoraPartitionTest, UndirectedReadKeepsRawOrderThenInverses) {
  Graph raw_graph = ReadCora(/*undirected=*/false);
  const EdgeTypeData& raw = raw_graph.edge_types.at(0);
  const EdgeTypeData& both = graph_->edge_types.at(0);
  ASSERT_EQ(raw.num_edges(), 5278);
  ASSERT_EQ(both.num_edges(), 10556);
  for (int64_t e = 0; e < raw.num_edges(); ++e) {
    ASSERT_EQ(both.src_ids[e], raw.src_ids[e]);
    ASSERT_EQ(both.dst_ids[e], raw.dst_ids[e]);
    ASSERT_EQ(both.src_ids[raw.num_edges() + e], raw.dst_ids[e]);
    ASSERT_EQ(both.dst_ids[raw.num_edges() + e], raw.src_ids[e]);
  }
}

TEST_F(CoraPartitionTest, RoundTripPreservesGraph) {
  const NodeTypeData& g = graph_->node_types.at(0);
  const EdgeTypeData& edge_list = graph_->edge_types.at(0);
  const std::string dir = tmp_->Sub("cora2");
  std::vector<std::unique_ptr<common::PartitionPart>> parts;
  for (int p = 0; p < 2; ++p) {
    auto part = common::PartitionPart::Load(dir, p);
    ASSERT_TRUE(part.ok()) << part.status();
    parts.push_back(*std::move(part));
  }
  EXPECT_EQ(parts[0]->manifest().node_types[0].num_nodes, 2708);
  EXPECT_EQ(parts[0]->manifest().edge_types[0].num_edges, 10556);

  std::vector<int64_t> orig_of_new(2708, -1);
  int64_t total_nodes = 0;
  for (const auto& part : parts) {
    const common::NodeShard* nodes = part->FindNodes("node");
    ASSERT_NE(nodes, nullptr);
    total_nodes += nodes->num_rows();
    for (int64_t r = 0; r < nodes->num_rows(); ++r) {
      const int64_t v = nodes->orig_ids[r];
      orig_of_new[nodes->begin + r] = v;
      ASSERT_EQ(nodes->labels[r], g.labels[v]);
      for (int64_t k = 0; k < g.feat_dim; ++k) {
        ASSERT_EQ(nodes->features[r * g.feat_dim + k], g.features[v * g.feat_dim + k]);
      }
      if (r > 0) {
        ASSERT_LT(nodes->orig_ids[r - 1], v) << "original order kept within a part";
      }
    }
  }
  EXPECT_EQ(total_nodes, 2708);
  std::set<int64_t> distinct(orig_of_new.begin(), orig_of_new.end());
  EXPECT_EQ(distinct.size(), 2708u);
  EXPECT_EQ(*distinct.begin(), 0);

  std::vector<int> stored(static_cast<size_t>(edge_list.num_edges()), 0);
  for (const auto& part : parts) {
    const common::NodeShard* nodes = part->FindNodes("node");
    const common::EdgeShard* edges = part->FindEdges("node__to__node");
    ASSERT_NE(edges, nullptr);
    for (int64_t v = 0; v < edges->csc.num_dst_nodes(); ++v) {
      auto nbrs = edges->csc.InNeighbors(v);
      ASSERT_TRUE(std::is_sorted(nbrs.begin(), nbrs.end()));
      for (size_t i = 0; i < nbrs.size(); ++i) {
        const int64_t e = edges->edge_ids[edges->csc.EdgeBegin(v) + static_cast<int64_t>(i)];
        ASSERT_GE(e, 0);
        ASSERT_LT(e, edge_list.num_edges());
        ++stored[e];
        ASSERT_EQ(edge_list.dst_ids[e], nodes->orig_ids[v]);
        ASSERT_EQ(edge_list.src_ids[e], orig_of_new[nbrs[i]]);
      }
    }
  }
  EXPECT_TRUE(std::all_of(stored.begin(), stored.end(), [](int c) { return c == 1; }))
      << "every edge stored exactly once";
}

TEST_F(CoraPartitionTest, SplitsArePreserved) {
  const std::string dir = tmp_->Sub("cora2");
  std::map<std::string, std::set<int64_t>> seen;
  for (int p = 0; p < 2; ++p) {
    auto part = common::PartitionPart::Load(dir, p);
    ASSERT_TRUE(part.ok()) << part.status();
    const common::NodeShard* nodes = (*part)->FindNodes("node");
    for (const auto& [name, ids] : nodes->splits) {
      ASSERT_TRUE(std::is_sorted(ids.begin(), ids.end()));
      for (int64_t id : ids) seen[name].insert(nodes->orig_ids[id - nodes->begin]);
    }
  }
  EXPECT_EQ(seen["train"].size(), 140u);
  EXPECT_EQ(seen["val"].size(), 500u);
  EXPECT_EQ(seen["test"].size(), 1000u);
  for (const char* name : {"train", "val", "test"}) {
    const auto want = graph_->node_types[0].splits.at(name).span();
    EXPECT_EQ(seen[name], std::set<int64_t>(want.begin(), want.end())) << name;
  }
}

TEST_F(CoraPartitionTest, SameSeedGivesByteIdenticalFiles) {
  PartitionOptions options;
  options.num_parts = 2;
  options.seed = 42;
  ASSERT_TRUE(PartitionGraph(*graph_, options, tmp_->Sub("again")).ok());
  auto a = ReadTree(tmp_->Sub("cora2"));
  auto b = ReadTree(tmp_->Sub("again"));
  EXPECT_EQ(a.size(), 1u + 2 * 9);
  EXPECT_TRUE(a == b);
  options.seed = 43;
  ASSERT_TRUE(PartitionGraph(*graph_, options, tmp_->Sub("other")).ok());
  auto c = ReadTree(tmp_->Sub("other"));
  EXPECT_NE(a["part_0/nodes/node/orig_id.npy"], c["part_0/nodes/node/orig_id.npy"]);
}

TEST_F(CoraPartitionTest, ExistingOutputNeedsForce) {
  PartitionOptions options;
  options.num_parts = 3;
  const std::string out = tmp_->Sub("forced");
  ASSERT_TRUE(PartitionGraph(*graph_, options, out).ok());
  auto again = PartitionGraph(*graph_, options, out);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kInvalidArgument);
  options.force = true;
  options.num_parts = 4;
  auto forced = PartitionGraph(*graph_, options, out);
  ASSERT_TRUE(forced.ok()) << forced.status();
  auto m = common::ReadManifest(out);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->num_parts, 4);
  EXPECT_FALSE(std::filesystem::exists(out + "/part_4"));
  for (const auto& e : std::filesystem::directory_iterator(tmp_->path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
    EXPECT_EQ(e.path().filename().string().find(".old-"), std::string::npos) << e.path();
  }
}

TEST(AssignPartsTest, RandomIsBalancedAndSeeded) {
  Graph g = testing::TinyGraph();
  PartitionOptions options;
  options.num_parts = 3;
  options.seed = 5;
  auto a = AssignGraphParts(g, options);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  std::vector<int> sizes(3, 0);
  for (int p : (*a)[0]) ++sizes[p];
  EXPECT_EQ(sizes, (std::vector<int>{4, 3, 3}));
  auto b = AssignGraphParts(g, options);
  EXPECT_EQ(*a, *b);
}

TEST(AssignPartsTest, RejectsBadOptions) {
  Graph g = testing::TinyGraph();
  PartitionOptions options;
  options.num_parts = 0;
  EXPECT_FALSE(AssignGraphParts(g, options).ok());
  options.num_parts = 11;
  EXPECT_FALSE(AssignGraphParts(g, options).ok());
  options.num_parts = 2;
  options.method = "kway";
  EXPECT_THAT(std::string(AssignGraphParts(g, options).status().message()),
              ::testing::HasSubstr("kway"));
}

// Replaces edge `e`'s destination (Graph arrays are read-only views).
void SetDst(Graph& g, int64_t e, int64_t dst) {
  std::vector<int64_t> ids = g.edge_types[0].dst_ids.ToVector();
  ids[e] = dst;
  g.edge_types[0].dst_ids = Array<int64_t>::Owned(std::move(ids));
}

TEST(PartitionGraphTest, InvalidGraphLeavesNoFolder) {
  testing::ScratchDir tmp;
  Graph g = testing::TinyGraph();
  SetDst(g, 3, 10);  // out of range
  PartitionOptions options;
  options.num_parts = 2;
  auto m = PartitionGraph(g, options, tmp.Sub("out"));
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));
}

// Feature rows are gathered in chunks of 16,384 rows (128 floats) on the workers: the files do
// not depend on the thread count, and of two bad values in different chunks the first is named.
TEST(PartitionGraphTest, FeatureRowsAreTheSameOnAnyThreadCountAndTheFirstBadRowIsNamed) {
  constexpr int64_t kNodes = 70000, kDim = 128;
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v + 1 < kNodes; ++v) {
    src.push_back(v);
    dst.push_back(v + 1);
  }
  Graph g = HomogeneousGraph(kNodes, src, dst);
  std::vector<float> feat(static_cast<size_t>(kNodes * kDim));
  for (size_t i = 0; i < feat.size(); ++i) feat[i] = static_cast<float>(i % 9973) * 0.5f;
  g.node_types[0].feat_dim = kDim;
  g.node_types[0].features = Array<float>::Owned(feat);
  testing::ScratchDir tmp;
  std::map<std::string, std::string> first;
  for (int threads : {1, 3, 8}) {
    PartitionOptions options;
    options.num_parts = 2;
    options.seed = 7;
    options.threads = threads;
    const std::string out = tmp.Sub("t" + std::to_string(threads));
    auto m = PartitionGraph(g, options, out);
    ASSERT_TRUE(m.ok()) << m.status();
    std::map<std::string, std::string> files = ReadTree(out);
    if (first.empty()) {
      first = files;
    } else {
      EXPECT_TRUE(files == first) << threads << " threads wrote other bytes";
    }
  }
  // Row 69,000 sits in a later chunk of its part than row 50,000 whichever part each is in
  // (parts hold ~35,000 rows in id order: chunk 0 is the first 16,384 of them).
  feat[static_cast<size_t>(69000 * kDim + 3)] = std::numeric_limits<float>::infinity();
  feat[static_cast<size_t>(50000 * kDim + 5)] = std::numeric_limits<float>::quiet_NaN();
  g.node_types[0].features = Array<float>::Owned(feat);
  for (int threads : {1, 8}) {
    PartitionOptions options;
    options.num_parts = 1;
    options.threads = threads;
    auto m = PartitionGraph(g, options, tmp.Sub("bad" + std::to_string(threads)));
    ASSERT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << threads;
    EXPECT_THAT(std::string(m.status().message()),
                ::testing::HasSubstr("input row 50000, feature 5 is nan"))
        << threads << " threads: " << m.status();
  }
}

TEST(TransformEdgesTest, UndirectedDropsRepeatsAndKeepsOneSelfLoop) {
  Graph g = HomogeneousGraph(3, {0, 1, 2, 0}, {1, 0, 2, 1});
  EdgeTransformOptions undirected;
  undirected.undirected = true;
  ASSERT_TRUE(TransformEdges(g, undirected).ok());
  // List: (0,1) (1,0) (2,2) (0,1) | (1,0) (0,1) (2,2) (1,0): keep first occurrences.
  ASSERT_EQ(g.edge_types.size(), 1u);
  EXPECT_EQ(g.edge_types[0].src_ids.ToVector(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(g.edge_types[0].dst_ids.ToVector(), (std::vector<int64_t>{1, 0, 2}));
}

}  // namespace
}  // namespace graphshard::partitioner
