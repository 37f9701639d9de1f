// Heterogeneous round trip on imdb, METIS balance and edge cut on Cora and imdb, determinism.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "common/file_util.h"
#include "common/partition_part.h"
#include "partitioner/inspect.h"
#include "partitioner/partition.h"
#include "partitioner/read_input.h"
#include "tests/testing/partition_fixture.h"
#include "tests/testing/source_paths.h"

namespace graphshard::partitioner {
namespace {

const std::string kData = testing::SourceDir() + "/tests/data/";

Graph ReadOrDie(const std::string& name, bool undirected = false) {
  auto g = ReadGraph(kData + name, {});
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return Graph{};
  if (undirected) {
    EdgeTransformOptions o;
    o.undirected = true;
    EXPECT_TRUE(TransformEdges(*g, o).ok());
  }
  return *std::move(g);
}

std::map<std::string, std::string> ReadTree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto bytes = common::ReadFileToString(e.path().string());
    out[std::filesystem::relative(e.path(), dir).string()] = bytes.ok() ? *bytes : "";
  }
  return out;
}

// Checks that the folder at `dir` holds exactly `g`: nodes of every type once (orig_id maps
// back, features and labels match), every edge of every type exactly once with its
// destination's owner, splits preserved.
void ExpectRoundTrip(const Graph& g, const std::string& dir, int num_parts) {
  std::vector<std::unique_ptr<common::PartitionPart>> parts;
  for (int p = 0; p < num_parts; ++p) {
    auto part = common::PartitionPart::Load(dir, p);
    ASSERT_TRUE(part.ok()) << part.status();
    parts.push_back(*std::move(part));
  }
  std::map<std::string, std::vector<int64_t>> orig_of_new;
  for (const NodeTypeData& t : g.node_types) {
    std::vector<int64_t>& orig = orig_of_new[t.name];
    orig.assign(static_cast<size_t>(t.num_nodes), -1);
    std::map<std::string, std::set<int64_t>> split_seen;
    for (const auto& part : parts) {
      const common::NodeShard* nodes = part->FindNodes(t.name);
      ASSERT_NE(nodes, nullptr) << t.name;
      ASSERT_EQ(nodes->feat_dim, t.feat_dim);
      for (int64_t r = 0; r < nodes->num_rows(); ++r) {
        const int64_t v = nodes->orig_ids[r];
        ASSERT_EQ(orig[nodes->begin + r], -1);
        orig[nodes->begin + r] = v;
        ASSERT_EQ(nodes->labels[r], t.labels.empty() ? -1 : std::max<int64_t>(-1, t.labels[v]));
        for (int64_t k = 0; k < t.feat_dim; ++k) {
          ASSERT_EQ(nodes->features[r * t.feat_dim + k], t.features[v * t.feat_dim + k]);
        }
      }
      for (const auto& [name, ids] : nodes->splits) {
        for (int64_t id : ids) split_seen[name].insert(nodes->orig_ids[id - nodes->begin]);
      }
    }
    EXPECT_EQ(std::set<int64_t>(orig.begin(), orig.end()).size(), static_cast<size_t>(t.num_nodes))
        << t.name << ": every node exactly once";
    for (const auto& [name, ids] : t.splits) {
      EXPECT_EQ(split_seen[name], std::set<int64_t>(ids.span().begin(), ids.span().end()))
          << t.name << " " << name;
    }
  }
  for (const EdgeTypeData& t : g.edge_types) {
    std::vector<int> stored(static_cast<size_t>(t.num_edges()), 0);
    for (const auto& part : parts) {
      const common::EdgeShard* edges = part->FindEdges(t.Name());
      ASSERT_NE(edges, nullptr) << t.Name();
      EXPECT_EQ(edges->info.num_edges, t.num_edges());
      const common::NodeShard* dst = part->FindNodes(t.dst);
      for (int64_t v = 0; v < edges->csc.num_dst_nodes(); ++v) {
        auto nbrs = edges->csc.InNeighbors(v);
        for (size_t i = 0; i < nbrs.size(); ++i) {
          const int64_t e = edges->edge_ids[edges->csc.EdgeBegin(v) + static_cast<int64_t>(i)];
          ASSERT_GE(e, 0);
          ASSERT_LT(e, t.num_edges());
          ++stored[e];
          ASSERT_EQ(t.dst_ids[e], dst->orig_ids[v]) << t.Name();
          ASSERT_EQ(t.src_ids[e], orig_of_new[t.src][nbrs[i]]) << t.Name();
        }
      }
    }
    EXPECT_TRUE(std::all_of(stored.begin(), stored.end(), [](int c) { return c == 1; }))
        << t.Name() << ": every edge stored exactly once";
  }
}

PartitionOptions Options(const std::string& method, int parts, uint64_t seed = 7) {
  PartitionOptions o;
  o.method = method;
  o.num_parts = parts;
  o.seed = seed;
  return o;
}

TEST(HeteroTest, ImdbReadsAllTypesAndRelations) {
  Graph g = ReadOrDie("imdb");
  ASSERT_EQ(g.node_types.size(), 3u);
  EXPECT_EQ(g.node_types[0].name, "actor");
  EXPECT_EQ(g.node_types[0].num_nodes, 5257);
  EXPECT_EQ(g.node_types[2].name, "movie");
  EXPECT_EQ(g.node_types[2].num_nodes, 4278);
  EXPECT_GT(g.node_types[2].num_classes, 1);
  EXPECT_TRUE(g.node_types[0].labels.empty());
  ASSERT_EQ(g.edge_types.size(), 4u);
  EXPECT_EQ(g.edge_types[0].Name(), "actor__actor_to_movie__movie");
  EXPECT_EQ(g.edge_types[0].num_edges(), 12828);
  EXPECT_EQ(g.node_types[2].splits.at("train").size(), 400);
}

TEST(HeteroTest, ImdbRoundTripRandomAndMetis) {
  Graph g = ReadOrDie("imdb");
  testing::ScratchDir tmp;
  for (const char* method : {"random", "metis"}) {
    for (int parts : {1, 3}) {
      const std::string out = tmp.Sub(std::string(method) + std::to_string(parts));
      auto m = PartitionGraph(g, Options(method, parts), out);
      ASSERT_TRUE(m.ok()) << m.status();
      ASSERT_EQ(m->edge_types.size(), 4u);
      EXPECT_EQ(m->node_types[0].num_classes, 0) << "actor has no labels";
      EXPECT_EQ(m->node_types[0].feat_dim, g.node_types[0].feat_dim);
      ExpectRoundTrip(g, out, parts);
    }
  }
}

TEST(HeteroTest, UndirectedAddsReverseRelationsAsPyG) {
  Graph g = ReadOrDie("imdb", /*undirected=*/true);
  ASSERT_EQ(g.edge_types.size(), 8u);
  EXPECT_EQ(g.edge_types[4].Name(), "movie__rev_actor_to_movie__actor");
  EXPECT_EQ(g.edge_types[4].num_edges(), 12828);
  testing::ScratchDir tmp;
  ASSERT_TRUE(PartitionGraph(g, Options("metis", 2), tmp.Sub("p")).ok());
  ExpectRoundTrip(g, tmp.Sub("p"), 2);
}

// METIS balances training nodes within 5% and cuts fewer edges than random.
void ExpectMetisBeatsRandom(const Graph& g, int parts) {
  testing::ScratchDir tmp;
  ASSERT_TRUE(PartitionGraph(g, Options("metis", parts), tmp.Sub("m")).ok());
  ASSERT_TRUE(PartitionGraph(g, Options("random", parts), tmp.Sub("r")).ok());
  auto metis = InspectPartition(tmp.Sub("m"));
  auto random = InspectPartition(tmp.Sub("r"));
  ASSERT_TRUE(metis.ok() && random.ok());
  EXPECT_LE(metis->train_balance, 1.05) << parts << " parts";
  EXPECT_LT(metis->total_edge_cut, random->total_edge_cut) << parts << " parts";
  EXPECT_LE(metis->edge_balance, 1.10) << parts << " parts";
  int64_t nodes = 0, edges = 0;
  for (const PartStats& p : metis->parts) {
    for (const auto& [name, n] : p.nodes_by_type) nodes += n;
    for (const auto& [name, n] : p.edges_by_type) edges += n;
  }
  EXPECT_EQ(nodes, g.TotalNodes());
  EXPECT_EQ(edges, g.TotalEdges());
  ExpectRoundTrip(g, tmp.Sub("m"), parts);
}

TEST(MetisTest, CoraBalancedTrainingNodesAndLowerCut) {
  Graph g = ReadOrDie("cora", /*undirected=*/true);
  ExpectMetisBeatsRandom(g, 2);
  ExpectMetisBeatsRandom(g, 4);
}

TEST(MetisTest, ImdbBalancedTrainingNodesAndLowerCut) {
  Graph g = ReadOrDie("imdb");
  ExpectMetisBeatsRandom(g, 2);
  ExpectMetisBeatsRandom(g, 3);
}

TEST(MetisTest, SameSeedGivesByteIdenticalFolder) {
  Graph g = ReadOrDie("imdb");
  testing::ScratchDir tmp;
  ASSERT_TRUE(PartitionGraph(g, Options("metis", 3, 11), tmp.Sub("a")).ok());
  ASSERT_TRUE(PartitionGraph(g, Options("metis", 3, 11), tmp.Sub("b")).ok());
  auto a = ReadTree(tmp.Sub("a"));
  EXPECT_EQ(a.size(), 1u + 3 * (3 * 3 + 3 + 4 * 3));  // nodes, movie splits, edges
  EXPECT_TRUE(a == ReadTree(tmp.Sub("b")));
  ASSERT_TRUE(PartitionGraph(g, Options("random", 3, 11), tmp.Sub("c")).ok());
  ASSERT_TRUE(PartitionGraph(g, Options("random", 3, 11), tmp.Sub("d")).ok());
  EXPECT_TRUE(ReadTree(tmp.Sub("c")) == ReadTree(tmp.Sub("d")));
}

TEST(MetisTest, TooManyEdgesSuggestsRandom) {
  // A graph whose edge count claims 2^31 cannot be built in a test; the check is on the count,
  // so a view with a fake size (never dereferenced) exercises it.
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
  EXPECT_EQ(parts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parts.status().message()), ::testing::HasSubstr("--method random"));
  EXPECT_THAT(std::string(parts.status().message()), ::testing::HasSubstr("32-bit"));
}

}  // namespace
}  // namespace graphshard::partitioner
