// Malformed OGB raw input: each problem is an error naming the file (and line where there is
// one), never a crash.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "partitioner/read_input.h"
#include "partitioner/write_input.h"
#include "tests/testing/partition_fixture.h"
#include "tests/testing/source_paths.h"

namespace graphshard::partitioner {
namespace {

using ::testing::HasSubstr;

const std::string kCora = testing::SourceDir() + "/tests/data/cora";

class MalformedOgbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.Sub("cora");
    ASSERT_TRUE(testing::CopyTree(kCora, dir_).ok());
  }
  // Replaces the file's content (text before gzip).
  void Rewrite(const std::string& rel, const std::string& text) {
    ASSERT_TRUE(testing::WriteGz(dir_ + "/" + rel, text).ok());
  }
  std::string Read(const std::string& rel) {
    auto text = testing::ReadGz(dir_ + "/" + rel);
    EXPECT_TRUE(text.ok());
    return text.ok() ? *text : "";
  }
  absl::Status ReadError() { return ReadOgbHomogeneous(dir_).status(); }

  testing::ScratchDir tmp_;
  std::string dir_;
};

TEST_F(MalformedOgbTest, IntactCopyReads) {
  auto g = ReadOgbHomogeneous(dir_);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->IsHomogeneous());
  EXPECT_EQ(g->node_types[0].num_nodes, 2708);
  EXPECT_EQ(g->edge_types[0].num_edges(), 5278);
  EXPECT_EQ(g->node_types[0].feat_dim, 1433);
  EXPECT_EQ(g->node_types[0].num_classes, 7);
}

TEST_F(MalformedOgbTest, MissingFile) {
  std::filesystem::remove(dir_ + "/raw/node-label.csv.gz");
  absl::Status s = ReadError();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("raw/node-label.csv.gz"));
}

TEST_F(MalformedOgbTest, MissingInputFolder) {
  auto g = ReadOgbHomogeneous(tmp_.Sub("nope"));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(MalformedOgbTest, BadNumberNamesFileAndLine) {
  std::string edges = Read("raw/edge.csv.gz");
  size_t second_nl = edges.find('\n', edges.find('\n') + 1);
  edges.insert(second_nl + 1, "0,abc\n");                // becomes line 3
  edges.erase(edges.rfind('\n', edges.size() - 2) + 1);  // keep the row count
  Rewrite("raw/edge.csv.gz", edges);
  absl::Status s = ReadError();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("raw/edge.csv.gz:3:"));
}

TEST_F(MalformedOgbTest, EdgeNodeIdOutOfRange) {
  std::string edges = Read("raw/edge.csv.gz");
  Rewrite("raw/edge.csv.gz", "5,2708\n" + edges.substr(edges.find('\n') + 1));
  absl::Status s = ReadError();
  EXPECT_THAT(std::string(s.message()), HasSubstr("raw/edge.csv.gz:1:"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("2708"));
}

TEST_F(MalformedOgbTest, EdgeCountMismatch) {
  Rewrite("raw/num-edge-list.csv.gz", "5279\n");
  absl::Status s = ReadError();
  EXPECT_THAT(std::string(s.message()), HasSubstr("edge.csv.gz"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("5279"));
}

TEST_F(MalformedOgbTest, LabelRowCountMismatch) {
  std::string labels = Read("raw/node-label.csv.gz");
  labels.erase(labels.rfind('\n', labels.size() - 2) + 1);  // drop the last row
  Rewrite("raw/node-label.csv.gz", labels);
  absl::Status s = ReadError();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("raw/node-label.csv.gz"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("2707"));
}

TEST_F(MalformedOgbTest, FeatureColumnCountMismatch) {
  std::string feats = Read("raw/node-feat.csv.gz");
  size_t nl = feats.find('\n');
  feats.insert(feats.find('\n', nl + 1), ",1");  // line 2 gets an extra column
  Rewrite("raw/node-feat.csv.gz", feats);
  absl::Status s = ReadError();
  EXPECT_THAT(std::string(s.message()), HasSubstr("raw/node-feat.csv.gz:2:"));
}

TEST_F(MalformedOgbTest, HugeNodeCountIsAnErrorNotACrash) {
  Rewrite("raw/num-node-list.csv.gz", "999999999999999\n");
  absl::Status s = ReadError();
  EXPECT_THAT(std::string(s.message()), HasSubstr("raw/node-feat.csv.gz"));
}

TEST_F(MalformedOgbTest, SplitIdOutOfRange) {
  Rewrite("split/public/train.csv.gz", "0\n1\n99999\n");
  absl::Status s = ReadError();
  EXPECT_THAT(std::string(s.message()), HasSubstr("split/public/train.csv.gz:3:"));
}

TEST_F(MalformedOgbTest, SeveralSplitFoldersNeedAName) {
  ASSERT_TRUE(testing::CopyTree(dir_ + "/split/public", dir_ + "/split/other").ok());
  absl::Status s = ReadError();
  EXPECT_THAT(std::string(s.message()), HasSubstr("--split"));
  OgbReadOptions options;
  options.split_name = "other";
  EXPECT_TRUE(ReadOgbHomogeneous(dir_, options).ok());
}

TEST_F(MalformedOgbTest, CorruptGzipIsDataLoss) {
  // A valid gzip header followed by garbage.
  std::string junk = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-garbage-garbage";
  std::filesystem::remove(dir_ + "/raw/node-label.csv.gz");
  FILE* f = std::fopen((dir_ + "/raw/node-label.csv.gz").c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(junk.data(), 1, junk.size(), f);
  std::fclose(f);
  absl::Status s = ReadError();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("node-label.csv.gz"));
}

TEST(OgbWriteTest, WriteReadRoundTrip) {
  testing::ScratchDir tmp;
  Graph g = testing::TinyGraph();
  ASSERT_TRUE(WriteOgbHomogeneous(g, tmp.Sub("tiny"), "mine").ok());
  auto back = ReadOgbHomogeneous(tmp.Sub("tiny"));
  ASSERT_TRUE(back.ok()) << back.status();
  const NodeTypeData &a = back->node_types[0], &b = g.node_types[0];
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(back->edge_types[0].src_ids.ToVector(), g.edge_types[0].src_ids.ToVector());
  EXPECT_EQ(back->edge_types[0].dst_ids.ToVector(), g.edge_types[0].dst_ids.ToVector());
  EXPECT_EQ(a.features.ToVector(), b.features.ToVector());
  EXPECT_EQ(a.labels.ToVector(), b.labels.ToVector());
  ASSERT_EQ(a.splits.size(), b.splits.size());
  for (const auto& [name, ids] : b.splits) {
    EXPECT_EQ(a.splits.at(name).ToVector(), ids.ToVector()) << name;
  }
  EXPECT_FALSE(WriteOgbHomogeneous(g, tmp.Sub("tiny")).ok()) << "refuses an existing folder";
}

TEST(OgbWriteTest, RefusesAGraphOfSeveralTypes) {
  testing::ScratchDir tmp;
  Graph g = testing::TinyGraph();
  NodeTypeData& other = g.node_types.emplace_back();
  other.name = "other";
  absl::Status s = WriteOgbHomogeneous(g, tmp.Sub("two"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("two")));
}

}  // namespace
}  // namespace graphshard::partitioner
