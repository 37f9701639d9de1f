#include "client/communicator.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphshard::client {
namespace {

// Several ranks are covered by trainer_train_test (Gloo) and deploy.netns_multihost.
TEST(AllGatherStrings, WorldOfOneReturnsItsOwnString) {
  std::unique_ptr<Communicator> comm = CreateLocalCommunicator();
  absl::StatusOr<std::vector<std::string>> all =
      AllGatherStrings(*comm, "boot/host/net:[4026531992]");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(*all, std::vector<std::string>{"boot/host/net:[4026531992]"});
  absl::StatusOr<std::vector<std::string>> exact =
      AllGatherStrings(*comm, std::string(16, 'x'), 16);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ((*exact)[0], std::string(16, 'x'));
  EXPECT_EQ((*AllGatherStrings(*comm, ""))[0], "");
}

TEST(AllGatherStrings, RefusesAStringOverTheLimit) {
  std::unique_ptr<Communicator> comm = CreateLocalCommunicator();
  absl::StatusOr<std::vector<std::string>> all = AllGatherStrings(*comm, std::string(17, 'x'), 16);
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(all.status().message().find("rank 0"), std::string::npos);
}

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](absl::string_view name) -> absl::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return absl::nullopt;
    return it->second;
  };
}

TEST(ParseNcclQueueDepth, DefaultWhereUnsetOrEmpty) {
  EXPECT_EQ(*ParseNcclQueueDepth(FakeEnv({})), kDefaultNcclQueueDepth);
  EXPECT_EQ(*ParseNcclQueueDepth(FakeEnv({{"GRAPHSHARD_NCCL_QUEUE_DEPTH", ""}})),
            kDefaultNcclQueueDepth);
}

TEST(ParseNcclQueueDepth, TakesTheVariableAndTheOlderSwitch) {
  EXPECT_EQ(*ParseNcclQueueDepth(FakeEnv({{"GRAPHSHARD_NCCL_QUEUE_DEPTH", "0"}})), 0);
  EXPECT_EQ(*ParseNcclQueueDepth(FakeEnv({{"GRAPHSHARD_NCCL_QUEUE_DEPTH", "8"}})), 8);
  EXPECT_EQ(*ParseNcclQueueDepth(FakeEnv(
                {{"GRAPHSHARD_NCCL_WAIT_EACH_STEP", "1"}, {"GRAPHSHARD_NCCL_QUEUE_DEPTH", "8"}})),
            0);
  EXPECT_EQ(*ParseNcclQueueDepth(FakeEnv({{"GRAPHSHARD_NCCL_WAIT_EACH_STEP", "0"}})),
            kDefaultNcclQueueDepth);
}

TEST(ParseNcclQueueDepth, RefusesWhatIsNotADepthNamingTheVariable) {
  for (const char* bad : {"-1", "65", "three", "2.5", "1e3"}) {
    const absl::StatusOr<int> d =
        ParseNcclQueueDepth(FakeEnv({{"GRAPHSHARD_NCCL_QUEUE_DEPTH", bad}}));
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(d.status().message()),
                testing::HasSubstr(absl::StrCat("GRAPHSHARD_NCCL_QUEUE_DEPTH='", bad, "'")));
  }
}

}  // namespace
}  // namespace graphshard::client
