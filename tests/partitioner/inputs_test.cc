// Input layouts (.npy folders, heterogeneous .npy, edge lists, OGB heterogeneous), layout
// detection, edge transformations, malformed input of each kind, and `generate --kind mag`.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/npy.h"
#include "partitioner/cli.h"
#include "partitioner/generate.h"
#include "partitioner/partition.h"
#include "partitioner/read_input.h"
#include "partitioner/write_input.h"
#include "tests/testing/partition_fixture.h"
#include "tests/testing/source_paths.h"

namespace graphshard::partitioner {
namespace {

using ::testing::HasSubstr;

const std::string kData = testing::SourceDir() + "/tests/data/";

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<int64_t> Vec(const Array<int64_t>& a) { return {a.span().begin(), a.span().end()}; }

int RunCli(const std::vector<std::string>& args, std::string* err = nullptr) {
  std::ostringstream out, e;
  int code = RunPartitionCli(args, out, e);
  if (err != nullptr) *err = e.str();
  return code;
}

TEST(DetectLayoutTest, KnowsEveryLayout) {
  EXPECT_EQ(*DetectLayout(kData + "cora"), "ogb");
  EXPECT_EQ(*DetectLayout(kData + "imdb"), "ogb-hetero");
  testing::ScratchDir tmp;
  EXPECT_EQ(DetectLayout(tmp.Sub("none")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(DetectLayout(tmp.path()).status().code(), absl::StatusCode::kInvalidArgument);
  WriteText(tmp.Sub("e.txt"), "0 1\n");
  EXPECT_EQ(*DetectLayout(tmp.Sub("e.txt")), "edgelist");
}

TEST(NpyInputTest, CoraAsNpyFolderReadsBackMapped) {
  auto cora = ReadGraph(kData + "cora", {});
  ASSERT_TRUE(cora.ok()) << cora.status();
  testing::ScratchDir tmp;
  ASSERT_TRUE(WriteNpyInput(*cora, tmp.Sub("npy")).ok());
  EXPECT_EQ(*DetectLayout(tmp.Sub("npy")), "npy");
  auto g = ReadGraph(tmp.Sub("npy"), {});
  ASSERT_TRUE(g.ok()) << g.status();
  const NodeTypeData& t = g->node_types[0];
  EXPECT_EQ(t.num_nodes, 2708);
  EXPECT_EQ(t.feat_dim, 1433);
  EXPECT_EQ(t.num_classes, 7);
  EXPECT_TRUE(t.features.mapped());
  EXPECT_EQ(Vec(g->edge_types[0].src_ids), Vec(cora->edge_types[0].src_ids));
  EXPECT_EQ(Vec(g->edge_types[0].dst_ids), Vec(cora->edge_types[0].dst_ids));
  EXPECT_EQ(Vec(t.splits.at("val")), Vec(cora->node_types[0].splits.at("val")));
  PartitionOptions o;
  o.num_parts = 2;
  o.method = "metis";
  EXPECT_TRUE(PartitionGraph(*g, o, tmp.Sub("parts")).ok());
}

TEST(NpyInputTest, HeteroNamingSchemeRoundTrips) {
  auto imdb = ReadGraph(kData + "imdb", {});
  ASSERT_TRUE(imdb.ok());
  testing::ScratchDir tmp;
  ASSERT_TRUE(WriteNpyInput(*imdb, tmp.Sub("npy")).ok());
  EXPECT_TRUE(std::filesystem::exists(tmp.Sub("npy/edge_index__actor__actor_to_movie__movie.npy")));
  EXPECT_TRUE(std::filesystem::exists(tmp.Sub("npy/train_idx__movie.npy")));
  EXPECT_EQ(*DetectLayout(tmp.Sub("npy")), "npy-hetero");
  auto g = ReadGraph(tmp.Sub("npy"), {});
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->node_types.size(), 3u);
  ASSERT_EQ(g->edge_types.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(g->edge_types[i].Name(), imdb->edge_types[i].Name());
    EXPECT_EQ(Vec(g->edge_types[i].dst_ids), Vec(imdb->edge_types[i].dst_ids));
  }
  EXPECT_EQ(g->node_types[2].num_classes, imdb->node_types[2].num_classes);
}

TEST(NpyInputTest, MalformedFilesNameTheFile) {
  testing::ScratchDir tmp;
  const std::string dir = tmp.Sub("npy");
  std::filesystem::create_directories(dir);
  const int64_t ei[] = {0, 1, 2, 1, 2, 7};
  ASSERT_TRUE(common::WriteNpy<int64_t>(dir + "/edge_index.npy", {2, 3}, ei).ok());
  const float x[] = {0, 1, 2, 3, 4, 5};
  ASSERT_TRUE(common::WriteNpy<float>(dir + "/x.npy", {3, 2}, x).ok());
  auto g = ReadGraph(dir, {});
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("edge_index.npy: column 2: target 7"));
  // Wrong shape, wrong dtype, truncated.
  ASSERT_TRUE(common::WriteNpy<int64_t>(dir + "/edge_index.npy", {3, 2}, ei).ok());
  EXPECT_THAT(std::string(ReadGraph(dir, {}).status().message()), HasSubstr("[2, num_edges]"));
  ASSERT_TRUE(common::WriteNpy<float>(dir + "/edge_index.npy", {2, 3}, x).ok());
  EXPECT_THAT(std::string(ReadGraph(dir, {}).status().message()), HasSubstr("edge_index.npy"));
  ASSERT_TRUE(common::WriteNpy<int64_t>(dir + "/edge_index.npy", {2, 3}, ei).ok());
  std::filesystem::resize_file(dir + "/x.npy", 100);
  auto t = ReadGraph(dir, {});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("x.npy: truncated"));
  // Through the CLI: exit 1, no output folder.
  std::string err;
  EXPECT_EQ(RunCli({"partition", "--input", dir, "--parts", "2", "--out", tmp.Sub("o")}, &err),
            kExitFailure);
  EXPECT_THAT(err, HasSubstr("x.npy"));
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("o")));
}

TEST(EdgeListTest, TextWithHeaderCommentsFeaturesLabelsSplits) {
  testing::ScratchDir tmp;
  WriteText(tmp.Sub("e.csv"), "# a comment\nsrc,dst\n0,1\n1\t2\n2 0\n\n3,3\n");
  WriteText(tmp.Sub("x.txt"), "1 2\n3 4\n5 6\n7 8\n");
  WriteText(tmp.Sub("y.txt"), "0\n1\nnan\n1\n");
  WriteText(tmp.Sub("train.txt"), "0\n3\n");
  ReadOptions o;
  o.features = tmp.Sub("x.txt");
  o.labels = tmp.Sub("y.txt");
  o.train_idx = tmp.Sub("train.txt");
  auto g = ReadGraph(tmp.Sub("e.csv"), o);
  ASSERT_TRUE(g.ok()) << g.status();
  const NodeTypeData& t = g->node_types[0];
  EXPECT_EQ(t.num_nodes, 4);
  EXPECT_EQ(t.feat_dim, 2);
  EXPECT_EQ(t.num_classes, 2);
  EXPECT_EQ(Vec(t.labels), (std::vector<int64_t>{0, 1, -1, 1}));
  EXPECT_EQ(Vec(g->edge_types[0].src_ids), (std::vector<int64_t>{0, 1, 2, 3}));
  EdgeTransformOptions x;
  x.drop_self_loops = true;
  x.undirected = true;
  ASSERT_TRUE(TransformEdges(*g, x).ok());
  EXPECT_EQ(Vec(g->edge_types[0].src_ids), (std::vector<int64_t>{0, 1, 2, 1, 2, 0}));
  EXPECT_EQ(Vec(g->edge_types[0].dst_ids), (std::vector<int64_t>{1, 2, 0, 0, 1, 2}));
}

TEST(EdgeListTest, DedupKeepsFirstOccurrenceInOrder) {
  testing::ScratchDir tmp;
  WriteText(tmp.Sub("e.txt"), "2 1\n0 1\n2 1\n1 0\n0 1\n");
  auto g = ReadGraph(tmp.Sub("e.txt"), {});
  ASSERT_TRUE(g.ok()) << g.status();
  EdgeTransformOptions x;
  x.dedup = true;
  ASSERT_TRUE(TransformEdges(*g, x).ok());
  EXPECT_EQ(Vec(g->edge_types[0].src_ids), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(Vec(g->edge_types[0].dst_ids), (std::vector<int64_t>{1, 1, 0}));
}

TEST(GenerateTest, FullScaleIsOgbnProductsShape) {
  GenerateOptions o = ProductsFullScale(0);
  EXPECT_EQ(o.num_nodes, 2449029);
  EXPECT_EQ(o.num_edges, 61859140);
  EXPECT_EQ(o.num_features, 100);
  EXPECT_EQ(o.num_classes, 47);
  o.num_nodes = 1000;  // same code path, small: num_edges is honoured exactly
  o.num_edges = 4321;
  o.num_features = 4;
  o.num_classes = 5;
  auto g = Generate(o);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->TotalEdges(), 4321);
}

TEST(EdgeListTest, MalformedLinesNameFileAndLine) {
  testing::ScratchDir tmp;
  WriteText(tmp.Sub("e.txt"), "0 1\n1 x\n");
  auto g = ReadGraph(tmp.Sub("e.txt"), {});
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("e.txt:2:"));
  WriteText(tmp.Sub("e.txt"), "0 1\n1 -2\n");
  EXPECT_THAT(std::string(ReadGraph(tmp.Sub("e.txt"), {}).status().message()),
              HasSubstr("e.txt:2:"));
  WriteText(tmp.Sub("e.txt"), "0 1 5\n");
  EXPECT_THAT(std::string(ReadGraph(tmp.Sub("e.txt"), {}).status().message()),
              HasSubstr("e.txt:1:"));
  WriteText(tmp.Sub("e.txt"), "0 1\n1 5\n");
  WriteText(tmp.Sub("x.txt"), "1\n2\n3\n");
  ReadOptions o;
  o.features = tmp.Sub("x.txt");
  EXPECT_THAT(std::string(ReadGraph(tmp.Sub("e.txt"), o).status().message()),
              HasSubstr("node id 5"));
  WriteText(tmp.Sub("x.txt"), "1 2\n3\n");
  EXPECT_THAT(std::string(ReadGraph(tmp.Sub("e.txt"), o).status().message()),
              HasSubstr("x.txt:2:"));
  std::string err;
  EXPECT_EQ(RunCli({"partition", "--input", tmp.Sub("e.txt"), "--features", tmp.Sub("x.txt"),
                    "--parts", "2", "--out", tmp.Sub("o")},
                   &err),
            kExitFailure);
  EXPECT_THAT(err, HasSubstr("x.txt:2:"));
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("o")));
}

class MalformedHeteroTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(testing::CopyTree(kData + "imdb", dir_).ok()); }
  void Rewrite(const std::string& rel, const std::string& text) {
    ASSERT_TRUE(testing::WriteGz(dir_ + "/" + rel, text).ok());
  }
  std::string Error() {
    std::string err;
    EXPECT_EQ(RunCli({"partition", "--input", dir_, "--parts", "2", "--out", tmp_.Sub("o")}, &err),
              kExitFailure);
    EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("o")));
    return err;
  }
  testing::ScratchDir tmp_;
  std::string dir_ = tmp_.Sub("imdb");
};

TEST_F(MalformedHeteroTest, BadNodeDict) {
  Rewrite("raw/num-node-dict.csv.gz", "actor,director,movie\n5257,x,4278\n");
  EXPECT_THAT(Error(), HasSubstr("num-node-dict.csv.gz:2:"));
  Rewrite("raw/num-node-dict.csv.gz", "actor,director,movie\n5257,2081\n");
  EXPECT_THAT(Error(), HasSubstr("num-node-dict.csv.gz:2:"));
}

TEST_F(MalformedHeteroTest, UnknownTypeInTriplets) {
  Rewrite("raw/triplet-type-list.csv.gz", "actor,actor_to_movie,movie\nwriter,wrote,movie\n");
  EXPECT_THAT(Error(), HasSubstr("triplet-type-list.csv.gz:2:"));
}

TEST_F(MalformedHeteroTest, EdgeOutOfRangeOfItsType) {
  // director ids are below 2081; movie ids below 4278.
  Rewrite("raw/relations/director___director_to_movie___movie/edge.csv.gz", "0,1\n2081,5\n");
  Rewrite("raw/relations/director___director_to_movie___movie/num-edge-list.csv.gz", "2\n");
  EXPECT_THAT(Error(), HasSubstr("director_to_movie___movie/edge.csv.gz:2: source 2081"));
}

TEST_F(MalformedHeteroTest, MissingRelationFolder) {
  std::filesystem::remove_all(dir_ + "/raw/relations/movie___movie_to_actor___actor");
  EXPECT_THAT(Error(), HasSubstr("movie___movie_to_actor___actor/num-edge-list.csv.gz"));
}

TEST_F(MalformedHeteroTest, BadSplitId) {
  Rewrite("split/public/movie/train.csv.gz", "1\n4278\n");
  EXPECT_THAT(Error(), HasSubstr("movie/train.csv.gz:2:"));
}

TEST_F(MalformedHeteroTest, RaggedFeatureRows) {
  Rewrite("raw/node-feat/director/node-feat.csv.gz", "1,2\n3\n");
  EXPECT_THAT(Error(), HasSubstr("director/node-feat.csv.gz:2:"));
}

TEST(GenerateMagTest, ShapeTypesAndDeterminism) {
  GenerateOptions o;
  o.kind = "mag";
  o.seed = 3;
  o.num_nodes = 2000;
  o.num_features = 16;
  o.num_classes = 5;
  auto a = GenerateMag(o);
  auto b = GenerateMag(o);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status();
  ASSERT_EQ(a->node_types.size(), 4u);
  EXPECT_EQ(a->node_types[1].name, "author");
  EXPECT_EQ(a->node_types[1].num_nodes, 3082);
  std::set<std::string> names;
  for (const EdgeTypeData& e : a->edge_types) names.insert(e.Name());
  EXPECT_EQ(names, (std::set<std::string>{
                       "author__affiliated_with__institution", "author__writes__paper",
                       "paper__cites__paper", "paper__has_topic__field_of_study",
                       "institution__rev_affiliated_with__author", "paper__rev_writes__author",
                       "field_of_study__rev_has_topic__paper"}));
  for (size_t i = 0; i < a->edge_types.size(); ++i) {
    EXPECT_EQ(Vec(a->edge_types[i].src_ids), Vec(b->edge_types[i].src_ids));
  }
  // Learnable: most citations stay within the class of the citing paper.
  const EdgeTypeData& cites = a->edge_types[2];
  const Array<int64_t>& y = a->node_types[0].labels;
  int64_t same = 0;
  for (int64_t e = 0; e < cites.num_edges(); ++e)
    same += y[cites.src_ids[e]] == y[cites.dst_ids[e]];
  EXPECT_GT(static_cast<double>(same) / static_cast<double>(cites.num_edges()), 0.7);
  EXPECT_TRUE(ValidateGraph(*a).ok());
}

TEST(GenerateMagTest, CliWritesOgbHeteroThatPartitions) {
  testing::ScratchDir tmp;
  std::string err;
  ASSERT_EQ(RunCli({"generate", "--kind", "mag", "--seed", "1", "--num-nodes", "500",
                    "--num-features", "8", "--out", tmp.Sub("mag")},
                   &err),
            kExitOk)
      << err;
  EXPECT_EQ(*DetectLayout(tmp.Sub("mag")), "ogb-hetero");
  ASSERT_EQ(RunCli({"partition", "--input", tmp.Sub("mag"), "--parts", "2", "--method", "metis",
                    "--out", tmp.Sub("p")},
                   &err),
            kExitOk)
      << err;
  ASSERT_EQ(RunCli({"generate", "--kind", "mag", "--seed", "1", "--num-nodes", "500", "--format",
                    "npy", "--out", tmp.Sub("magnpy")},
                   &err),
            kExitOk)
      << err;
  EXPECT_EQ(*DetectLayout(tmp.Sub("magnpy")), "npy-hetero");
  EXPECT_EQ(RunCli({"generate", "--kind", "products", "--scale", "half", "--seed", "1", "--out",
                    tmp.Sub("x")}),
            kExitUsage);
}

}  // namespace
}  // namespace graphshard::partitioner
