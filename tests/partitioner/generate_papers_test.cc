// The papers-shaped generator at small sizes: its shape, that it is learnable, that its output
// does not depend on the thread count, and that it partitions.

#include "partitioner/generate_papers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "partitioner/cli.h"
#include "partitioner/partition.h"
#include "partitioner/read_input.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::partitioner {
namespace {

using ::testing::HasSubstr;

PapersOptions Nodes(int64_t n, uint64_t seed, int threads) {
  PapersOptions o;
  o.seed = seed;
  o.num_nodes = n;
  o.threads = threads;
  return o;
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GeneratePapersTest, HasPapers100MShape) {
  testing::ScratchDir tmp;
  const int64_t n = 60000;
  auto stats = GeneratePapers(Nodes(n, 1, 2), tmp.Sub("g"));
  ASSERT_TRUE(stats.ok()) << stats.status();
  auto g = ReadNpyFolder(tmp.Sub("g"));
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(ValidateGraph(*g).ok());
  const NodeTypeData& t = g->node_types[0];
  const EdgeTypeData& e = g->edge_types[0];
  EXPECT_EQ(t.num_nodes, n);
  EXPECT_EQ(t.feat_dim, kPapersFeatures);
  EXPECT_EQ(t.num_classes, kPapersClasses);
  const int64_t m = stats->citations;
  ASSERT_EQ(e.num_edges(), 2 * m);
  std::set<std::pair<int64_t, int64_t>> seen;
  std::vector<int64_t> degree(n, 0);
  for (int64_t k = 0; k < m; ++k) {
    const int64_t u = e.src_ids[k], v = e.dst_ids[k];
    ASSERT_LT(v, u) << "a paper cites only older ones";
    ASSERT_EQ(e.src_ids[m + k], v) << "edge " << m + k << " is edge " << k << " reversed";
    ASSERT_EQ(e.dst_ids[m + k], u);
    ASSERT_TRUE(seen.insert({v, u}).second) << "repeated citation " << u << " -> " << v;
    ++degree[u];
    ++degree[v];
  }
  // ogbn-papers100M: 29.1 directed edges per node; power-law tail far above the mean.
  EXPECT_NEAR(stats->mean_degree, 29.1, 2.0);
  EXPECT_GT(*std::max_element(degree.begin(), degree.end()), 20 * 29);
  EXPECT_EQ(stats->max_degree, *std::max_element(degree.begin(), degree.end()));
  // Split sizes in papers100M's proportions (1.09% / 0.11% / 0.19%), binomial spread.
  EXPECT_NEAR(t.splits.at("train").size(), 652, 80);
  EXPECT_NEAR(t.splits.at("val").size(), 68, 25);
  EXPECT_NEAR(t.splits.at("test").size(), 116, 35);
  EXPECT_EQ(t.splits.at("train").size(), stats->train);
  std::set<int64_t> labelled;
  for (const char* split : {"train", "val", "test"}) {
    const auto ids = t.splits.at(split).ToVector();
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << split;
    labelled.insert(ids.begin(), ids.end());
  }
  for (int64_t u = 0; u < n; ++u) {
    if (labelled.count(u)) {
      ASSERT_GE(t.labels[u], 0);
      ASSERT_LT(t.labels[u], kPapersClasses);
    } else {
      ASSERT_EQ(t.labels[u], -1) << "unlabelled papers carry -1, as OGB's NaN";
    }
  }
}

// Neighbours mostly share a paper's class, so the mean of a labelled paper's neighbours'
// features points towards its class: same-class pairs of those means are far more alike than
// pairs of different classes. Own features alone are much noisier.
TEST(GeneratePapersTest, NeighbourhoodsCarryTheClass) {
  testing::ScratchDir tmp;
  const int64_t n = 40000;
  ASSERT_TRUE(GeneratePapers(Nodes(n, 5, 2), tmp.Sub("g")).ok());
  auto g = ReadNpyFolder(tmp.Sub("g"));
  ASSERT_TRUE(g.ok()) << g.status();
  const NodeTypeData& t = g->node_types[0];
  const EdgeTypeData& e = g->edge_types[0];
  const int f = kPapersFeatures;
  std::vector<double> sum(static_cast<size_t>(n * f), 0.0);
  std::vector<int64_t> count(n, 0);
  for (int64_t k = 0; k < e.num_edges(); ++k) {
    const int64_t u = e.dst_ids[k], v = e.src_ids[k];
    if (t.labels[u] < 0) continue;
    for (int c = 0; c < f; ++c) sum[u * f + c] += t.features[v * f + c];
    ++count[u];
  }
  std::vector<int64_t> nodes;
  for (int64_t u = 0; u < n; ++u) {
    if (t.labels[u] >= 0 && count[u] >= 5) nodes.push_back(u);
  }
  ASSERT_GT(nodes.size(), 200u);
  auto cosine = [&](const double* a, const double* b) {
    double ab = 0, aa = 0, bb = 0;
    for (int c = 0; c < f; ++c) {
      ab += a[c] * b[c];
      aa += a[c] * a[c];
      bb += b[c] * b[c];
    }
    return ab / std::sqrt(aa * bb);
  };
  std::vector<double> own(static_cast<size_t>(n * f));
  for (int64_t i = 0; i < n * f; ++i) own[i] = t.features[i];
  double same_nb = 0, diff_nb = 0, same_own = 0;
  int64_t n_same = 0, n_diff = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t j = i + 1; j < nodes.size(); ++j) {
      const int64_t a = nodes[i], b = nodes[j];
      const double nb = cosine(&sum[a * f], &sum[b * f]);
      if (t.labels[a] == t.labels[b]) {
        same_nb += nb;
        same_own += cosine(&own[a * f], &own[b * f]);
        ++n_same;
      } else if (n_diff < 20000) {
        diff_nb += nb;
        ++n_diff;
      }
    }
  }
  ASSERT_GT(n_same, 20);
  same_nb /= static_cast<double>(n_same);
  diff_nb /= static_cast<double>(n_diff);
  same_own /= static_cast<double>(n_same);
  EXPECT_GT(same_nb, diff_nb + 0.12) << "same class " << same_nb << ", different " << diff_nb;
  EXPECT_GT(same_nb, same_own + 0.12) << "neighbours " << same_nb << ", own " << same_own;
}

TEST(GeneratePapersTest, SameBytesForAnyThreadCountAndSeedMatters) {
  testing::ScratchDir tmp;
  ASSERT_TRUE(GeneratePapers(Nodes(70000, 3, 1), tmp.Sub("one")).ok());
  ASSERT_TRUE(GeneratePapers(Nodes(70000, 3, 5), tmp.Sub("five")).ok());
  ASSERT_TRUE(GeneratePapers(Nodes(70000, 4, 5), tmp.Sub("other")).ok());
  for (const char* file : {"edge_index.npy", "x.npy", "y.npy", "train_idx.npy", "val_idx.npy",
                           "test_idx.npy"}) {
    EXPECT_EQ(FileBytes(tmp.Sub("one") + "/" + file), FileBytes(tmp.Sub("five") + "/" + file))
        << file;
  }
  EXPECT_NE(FileBytes(tmp.Sub("one") + "/edge_index.npy"),
            FileBytes(tmp.Sub("other") + "/edge_index.npy"));
}

// The partition of a generated graph is the same with 1 and with 4 workers, byte for byte.
TEST(GeneratePapersTest, PartitionsIdenticallyOnAnyThreadCount) {
  testing::ScratchDir tmp;
  ASSERT_TRUE(GeneratePapers(Nodes(30000, 2, 2), tmp.Sub("g")).ok());
  auto g = ReadNpyFolder(tmp.Sub("g"));
  ASSERT_TRUE(g.ok()) << g.status();
  PartitionOptions o;
  o.num_parts = 3;
  o.threads = 1;
  ASSERT_TRUE(PartitionGraph(*g, o, tmp.Sub("p1")).ok());
  o.threads = 4;
  ASSERT_TRUE(PartitionGraph(*g, o, tmp.Sub("p4")).ok());
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(tmp.Sub("p1"))) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = std::filesystem::relative(entry.path(), tmp.Sub("p1")).string();
    EXPECT_EQ(FileBytes(entry.path().string()), FileBytes(tmp.Sub("p4") + "/" + rel)) << rel;
    ++files;
  }
  EXPECT_GT(files, 20);
}

TEST(GeneratePapersTest, BadOptionsAreRefusedAndLeaveNothing) {
  testing::ScratchDir tmp;
  PapersOptions o;
  o.scale = 0;
  EXPECT_EQ(GeneratePapers(o, tmp.Sub("a")).status().code(), absl::StatusCode::kInvalidArgument);
  o.scale = 1e-6;  // 111 nodes
  auto s = GeneratePapers(o, tmp.Sub("a")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--scale"));
  o = Nodes(5000, 1, -1);
  EXPECT_EQ(GeneratePapers(o, tmp.Sub("a")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("a")));
  ASSERT_TRUE(GeneratePapers(Nodes(5000, 1, 1), tmp.Sub("b")).ok());
  const std::string before = FileBytes(tmp.Sub("b") + "/x.npy");
  s = GeneratePapers(Nodes(5000, 2, 1), tmp.Sub("b")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FileBytes(tmp.Sub("b") + "/x.npy"), before) << "an existing folder is kept";
}

TEST(GeneratePapersTest, CommandLinePrintsTheShapeAsJson) {
  testing::ScratchDir tmp;
  std::ostringstream out, err;
  const int code = RunPartitionCli({"generate", "--kind", "papers", "--scale", "0.0001", "--seed",
                                    "1", "--threads", "2", "--out", tmp.Sub("g")},
                                   out, err);
  ASSERT_EQ(code, kExitOk) << err.str();
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("generated papers: 11106 nodes"));
  const auto json = nlohmann::json::parse(text.substr(text.find('{')));
  EXPECT_EQ(json["nodes"], 11106);
  EXPECT_EQ(json["directed_edges"], 2 * json["citations"].get<int64_t>());
  EXPECT_EQ(json["classes"], kPapersClasses);
  std::ostringstream out2, err2;
  EXPECT_EQ(RunPartitionCli({"generate", "--kind", "papers", "--seed", "1", "--num-features",
                             "16", "--out", tmp.Sub("h")},
                            out2, err2),
            kExitUsage);
  EXPECT_THAT(err2.str(), HasSubstr("--num-features is not for --kind papers"));
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("h")));
}

}  // namespace
}  // namespace graphshard::partitioner
