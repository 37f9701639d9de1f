// The command line, run in-process: exit codes, messages, atomic output.

#include "partitioner/cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/testing/partition_fixture.h"
#include "tests/testing/source_paths.h"

namespace graphshard::partitioner {
namespace {

using ::testing::HasSubstr;

const std::string kCora = testing::SourceDir() + "/tests/data/cora";

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = RunPartitionCli(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(CliTest, UsageErrorsExitTwo) {
  testing::ScratchDir tmp;
  const std::string out = tmp.Sub("o");
  EXPECT_EQ(RunCli({}).code, kExitUsage);
  EXPECT_EQ(RunCli({"shuffle"}).code, kExitUsage);
  Result r = RunCli({"partition", "--input", kCora, "--parts", "2", "--out", out, "--bogus"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--bogus"));
  EXPECT_EQ(RunCli({"partition", "--input", kCora, "--out", out}).code, kExitUsage);  // no --parts
  EXPECT_EQ(RunCli({"partition", "--input", kCora, "--parts", "two", "--out", out}).code,
            kExitUsage);
  EXPECT_EQ(
      RunCli({"partition", "--input", kCora, "--parts", "2", "--out", out, "--method", "kway"})
          .code,
      kExitUsage);
  EXPECT_EQ(RunCli({"partition", "--input", kCora, "--parts", "2", "--out"}).code, kExitUsage);
  EXPECT_EQ(RunCli({"generate", "--kind", "products", "--out", out}).code, kExitUsage);  // no seed
  EXPECT_EQ(
      RunCli({"generate", "--kind", "products", "--seed", "1", "--out", out, "--num-nodes", "-5"})
          .code,
      kExitUsage);
  EXPECT_EQ(RunCli({"inspect"}).code, kExitUsage);
  EXPECT_EQ(RunCli({"help"}).code, kExitOk);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CliTest, HelpOfEverySubcommandExitsZeroListingItsFlags) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> flags;
  };
  for (const Case& c : std::vector<Case>{
           {{"--help"}, {"generate", "partition --input", "inspect DIR", "--drop-self-loops"}},
           {{"generate", "--help"}, {"--kind", "--seed", "--out", "--scale", "--max-nodes"}},
           {{"partition", "-h"}, {"--input", "--parts", "--method", "--test-idx", "--quiet"}},
           {{"inspect", "--help"}, {"--json", "--no-verify"}},
       }) {
    Result r = RunCli(c.args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    for (const std::string& flag : c.flags) EXPECT_THAT(r.out, HasSubstr(flag)) << c.args[0];
  }
  Result r = RunCli({"generate", "--kind", "products", "--bogus"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("unknown flag --bogus"));
}

TEST(CliTest, PartitionAndInspectCora) {
  testing::ScratchDir tmp;
  const std::string out = tmp.Sub("cora2");
  Result r = RunCli({"partition", "--input", kCora, "--parts", "2", "--method", "random",
                     "--undirected", "--seed=3", "--out", out});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  r = RunCli({"inspect", out, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["num_nodes"], 2708);
  EXPECT_EQ(j["num_edges"], 10556);
  ASSERT_EQ(j["parts"].size(), 2u);
  int64_t train = 0;
  for (const auto& p : j["parts"]) {
    train += p["train_nodes"].get<int64_t>();
    EXPECT_GT(p["edge_cut"].get<int64_t>(), 0);
    EXPECT_LE(p["edge_cut"].get<int64_t>(), p["edges"].get<int64_t>());
  }
  EXPECT_EQ(train, 140);
  r = RunCli({"inspect", out});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("edge cut"));

  // Existing output: refused without --force, replaced with it.
  r = RunCli({"partition", "--input", kCora, "--parts", "3", "--out", out});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("--force"));
  r = RunCli({"partition", "--input", kCora, "--parts", "3", "--out", out, "--force"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/part_2"));
}

TEST(CliTest, PartitionWithMethodStream) {
  testing::ScratchDir tmp;
  const std::string out = tmp.Sub("cora_stream");
  Result r = RunCli({"partition", "--input", kCora, "--parts", "2", "--method", "stream",
                     "--stream-passes", "6", "--undirected", "--out", out});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("with stream"));
  EXPECT_THAT(r.err, HasSubstr("stream: pass 1/6"));
  r = RunCli({"inspect", out, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["method"], "stream");
  EXPECT_EQ(j["num_nodes"], 2708);
  EXPECT_EQ(RunCli({"partition", "--input", kCora, "--parts", "2", "--method", "stream",
                    "--stream-passes", "0", "--out", tmp.Sub("o")})
                .code,
            kExitUsage);
  EXPECT_THAT(RunCli({"partition", "--help"}).out, HasSubstr("random|metis|stream"));
}

TEST(CliTest, MalformedInputExitsOneAndLeavesNothing) {
  testing::ScratchDir tmp;
  const std::string in = tmp.Sub("cora");
  ASSERT_TRUE(testing::CopyTree(kCora, in).ok());
  ASSERT_TRUE(testing::WriteGz(in + "/raw/num-node-list.csv.gz", "2708x\n").ok());
  Result r = RunCli({"partition", "--input", in, "--parts", "2", "--out", tmp.Sub("out")});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("num-node-list.csv.gz:1"));
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    EXPECT_EQ(e.path().filename(), "cora") << "left behind: " << e.path();
  }
  r = RunCli({"inspect", tmp.Sub("missing")});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("graphshard.json"));
}

TEST(CliTest, GenerateThenPartition) {
  testing::ScratchDir tmp;
  Result r =
      RunCli({"generate", "--kind", "products", "--seed", "5", "--out", tmp.Sub("g"), "--num-nodes",
              "2000", "--avg-degree", "6", "--num-features", "8", "--num-classes", "4"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(std::filesystem::exists(tmp.Sub("g/split/random/valid.csv.gz")));
  r = RunCli({"partition", "--input", tmp.Sub("g"), "--parts", "4", "--undirected", "--out",
              tmp.Sub("p")});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  r = RunCli({"inspect", tmp.Sub("p"), "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["num_nodes"], 2000);
  EXPECT_EQ(j["num_edges"], 2 * 2000 * 6 / 2);
  r = RunCli({"generate", "--kind", "products", "--seed", "5", "--out", tmp.Sub("g")});
  EXPECT_EQ(r.code, kExitFailure) << "refuses to overwrite";
}

}  // namespace
}  // namespace graphshard::partitioner
