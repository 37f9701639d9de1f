// Where graphshard-health and graphshard-stats find the servers: a --servers list (replicas
// joined with '+'), or a registry folder read anew, with the expected servers that have not
// registered named; neither or both is a usage error.
#include "common/server_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "common/registry.h"
#include "tests/testing/scratch_dir.h"

namespace graphshard::common {
namespace {

using ::testing::HasSubstr;

// (part, replica, address, missing code) of each target, for comparisons.
using Row = std::tuple<int, int, std::string, absl::StatusCode>;
std::vector<Row> Rows(const std::vector<ServerTarget>& targets) {
  std::vector<Row> out;
  for (const ServerTarget& t : targets) {
    out.emplace_back(t.part, t.replica, t.address, t.missing.code());
  }
  return out;
}
ServerListOptions Options(const std::string& servers, const std::string& registry, int parts = 0,
                          int replicas = 0) {
  ServerListOptions o;
  o.servers = servers;
  o.registry = registry;
  o.parts = parts;
  o.replicas = replicas;
  return o;
}
constexpr absl::StatusCode kOk = absl::StatusCode::kOk;
constexpr absl::StatusCode kNotFound = absl::StatusCode::kNotFound;

class ServerListTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_.path() + "/registry"; }
  testing::ScratchDir scratch_{"server_list_test"};
  std::string dir_;  // inside scratch_, made by the code under test
};

TEST_F(ServerListTest, ServersListGivesEveryReplicaOfEveryPart) {
  absl::StatusOr<std::vector<ServerTarget>> t = ResolveServers(Options("a:1+c:3,b:2", ""));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Rows(*t),
            (std::vector<Row>{{0, 0, "a:1", kOk}, {0, 1, "c:3", kOk}, {1, 0, "b:2", kOk}}));
  absl::Status bad = CheckServerSource(Options("a:1,nohost", ""));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("nohost"));
}

TEST_F(ServerListTest, RegistryGivesItsEntriesByPartThenReplica) {
  ASSERT_TRUE(PublishAddress(dir_, 1, "h:11").ok());
  ASSERT_TRUE(PublishAddress(dir_, 0, "h:2", 1).ok());
  ASSERT_TRUE(PublishAddress(dir_, 0, "h:1").ok());
  ASSERT_TRUE(PublishAddress(dir_, 10, "h:10").ok());
  absl::StatusOr<std::vector<ServerTarget>> t = ResolveServers(Options("", dir_));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(
      Rows(*t),
      (std::vector<Row>{
          {0, 0, "h:1", kOk}, {0, 1, "h:2", kOk}, {1, 0, "h:11", kOk}, {10, 0, "h:10", kOk}}));
  EXPECT_EQ(ServerName(0, 0), "part 0");
  EXPECT_EQ(ServerName(0, 1), "part 0 replica 1");
}

TEST_F(ServerListTest, RegistryWithPartsNamesThePartsNotRegistered) {
  ASSERT_TRUE(PublishAddress(dir_, 1, "h:11", 1).ok());  // part 1 by a replica only
  ASSERT_TRUE(PublishAddress(dir_, 5, "h:5").ok());      // beyond --parts: left out
  std::ofstream(RegistryFile(dir_, 2)) << "garbage\n";
  absl::StatusOr<std::vector<ServerTarget>> t = ResolveServers(Options("", dir_, 3));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Rows(*t), (std::vector<Row>{{0, 0, "", kNotFound},
                                        {1, 1, "h:11", kOk},
                                        {2, 0, "", absl::StatusCode::kDataLoss}}));
  EXPECT_THAT((*t)[0].missing.message(), HasSubstr(RegistryFile(dir_, 0) + " does not exist"));
  EXPECT_THAT((*t)[2].missing.message(), HasSubstr("part_2"));
}

TEST_F(ServerListTest, RegistryWithReplicasExpectsEachReplicaAndNoOther) {
  ASSERT_TRUE(PublishAddress(dir_, 0, "h:1").ok());
  ASSERT_TRUE(PublishAddress(dir_, 0, "h:3", 2).ok());  // replica 2 of --replicas 2: left out
  ASSERT_TRUE(PublishAddress(dir_, 1, "h:12", 1).ok());
  absl::StatusOr<std::vector<ServerTarget>> t = ResolveServers(Options("", dir_, 2, 2));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(
      Rows(*t),
      (std::vector<Row>{
          {0, 0, "h:1", kOk}, {0, 1, "", kNotFound}, {1, 0, "", kNotFound}, {1, 1, "h:12", kOk}}));
}

// The first server creates the folder: until then, with --parts every server is missing; without
// it, there is nothing to list (NotFound naming the folder).
TEST_F(ServerListTest, MissingRegistryFolder) {
  absl::StatusOr<std::vector<ServerTarget>> t = ResolveServers(Options("", dir_, 2));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Rows(*t), (std::vector<Row>{{0, 0, "", kNotFound}, {1, 0, "", kNotFound}}));
  absl::StatusOr<std::vector<ServerTarget>> none = ResolveServers(Options("", dir_));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr(dir_));
}

TEST_F(ServerListTest, NeitherOrBothIsInvalidArgumentNamingTheFlags) {
  for (const ServerListOptions& o : {Options("", ""), Options("a:1", dir_)}) {
    absl::Status s = CheckServerSource(o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("--registry"));
    EXPECT_THAT(s.message(), HasSubstr("--servers"));
    EXPECT_EQ(ResolveServers(o).status(), s);
  }
  EXPECT_THAT(CheckServerSource(Options("a:1", dir_)).message(), HasSubstr("both"));
  EXPECT_EQ(CheckServerSource(Options("", dir_, -1)).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphshard::common
