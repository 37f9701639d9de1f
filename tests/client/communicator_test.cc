#include "client/communicator.h"

#include <string>
#include <vector>

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

}  // namespace
}  // namespace graphshard::client
