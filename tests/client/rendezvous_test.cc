#include "client/rendezvous.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace graphshard::client {
namespace {

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](absl::string_view name) -> absl::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return absl::nullopt;
    return it->second;
  };
}

TEST(ParseRendezvous, DefaultsToSingleProcess) {
  absl::StatusOr<RendezvousConfig> c = ParseRendezvous(FakeEnv({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rank, 0);
  EXPECT_EQ(c->world_size, 1);
  EXPECT_EQ(c->local_rank, 0);
  EXPECT_EQ(c->master_addr, "127.0.0.1");
}

TEST(ParseRendezvous, ReadsTorchVariables) {
  absl::StatusOr<RendezvousConfig> c = ParseRendezvous(FakeEnv({{"MASTER_ADDR", "10.0.0.7"},
                                                                {"MASTER_PORT", "29512"},
                                                                {"RANK", "3"},
                                                                {"WORLD_SIZE", "4"},
                                                                {"LOCAL_RANK", "1"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->master_addr, "10.0.0.7");
  EXPECT_EQ(c->master_port, 29512);
  EXPECT_EQ(c->rank, 3);
  EXPECT_EQ(c->world_size, 4);
  EXPECT_EQ(c->local_rank, 1);
}

TEST(ParseRendezvous, FallsBackToSlurm) {
  absl::StatusOr<RendezvousConfig> c = ParseRendezvous(FakeEnv({{"MASTER_ADDR", "node1"},
                                                                {"MASTER_PORT", "29500"},
                                                                {"SLURM_PROCID", "5"},
                                                                {"SLURM_NTASKS", "8"},
                                                                {"SLURM_LOCALID", "1"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rank, 5);
  EXPECT_EQ(c->world_size, 8);
  EXPECT_EQ(c->local_rank, 1);
}

TEST(ParseRendezvous, TorchVariablesWinOverSlurm) {
  absl::StatusOr<RendezvousConfig> c = ParseRendezvous(FakeEnv({{"MASTER_PORT", "29500"},
                                                                {"RANK", "1"},
                                                                {"WORLD_SIZE", "2"},
                                                                {"SLURM_PROCID", "5"},
                                                                {"SLURM_NTASKS", "8"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rank, 1);
  EXPECT_EQ(c->world_size, 2);
}

TEST(ParseRendezvous, RejectsNonNumbers) {
  absl::StatusOr<RendezvousConfig> c = ParseRendezvous(FakeEnv({{"RANK", "one"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("RANK"), absl::string_view::npos);
}

TEST(ParseRendezvous, RejectsRankOutsideWorld) {
  absl::StatusOr<RendezvousConfig> c = ParseRendezvous(
      FakeEnv({{"MASTER_PORT", "29500"}, {"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "2"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("SLURM_PROCID"), absl::string_view::npos);
}

TEST(ParseRendezvous, RejectsBadWorldSizePortAndAddress) {
  EXPECT_FALSE(ParseRendezvous(FakeEnv({{"WORLD_SIZE", "0"}})).ok());
  EXPECT_FALSE(ParseRendezvous(FakeEnv({{"MASTER_PORT", "70000"}})).ok());
  EXPECT_FALSE(ParseRendezvous(FakeEnv({{"MASTER_PORT", "0"}})).ok());
  EXPECT_FALSE(ParseRendezvous(FakeEnv({{"MASTER_ADDR", " "}})).ok());
  EXPECT_FALSE(ParseRendezvous(FakeEnv({{"LOCAL_RANK", "-1"}})).ok());
}

TEST(ParseRendezvous, MultiProcessNeedsMasterPort) {
  absl::StatusOr<RendezvousConfig> c =
      ParseRendezvous(FakeEnv({{"RANK", "0"}, {"WORLD_SIZE", "2"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("MASTER_PORT"), absl::string_view::npos);
}

}  // namespace
}  // namespace graphshard::client
