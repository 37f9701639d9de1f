#include "client/server_set.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/testing/scratch_dir.h"

namespace graphshard::client {
namespace {

class RegistryTest : public ::testing::Test {
 protected:
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  testing::ScratchDir scratch_{"server_set_test"};
  std::filesystem::path dir_ = scratch_.path();
};

TEST_F(RegistryTest, MalformedEntryIsDataLossNamingTheFile) {
  Write("part_0", "no port here\n");
  DiscoveryOptions options;
  options.registry_dir = dir_.string();
  options.server_wait_s = 5;
  absl::StatusOr<ServerSet> s = ConnectServers(options);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find("part_0"), absl::string_view::npos) << s.status();
}

TEST_F(RegistryTest, WaitingForAMissingServerFailsNamingIt) {
  DiscoveryOptions options;
  options.registry_dir = dir_.string();
  options.server_wait_s = 0.3;
  absl::StatusOr<ServerSet> s = ConnectServers(options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.status().message().find("part 0"), absl::string_view::npos) << s.status();
}

TEST(ConnectServers, UnreachableServerFailsNamingItsAddress) {
  // Port 1 on loopback: nothing listens there (connection refused), so the wait times out.
  DiscoveryOptions options;
  options.servers = {"127.0.0.1:1"};
  options.server_wait_s = 0.5;
  absl::StatusOr<ServerSet> s = ConnectServers(options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.status().message().find("127.0.0.1:1"), absl::string_view::npos) << s.status();
}

}  // namespace
}  // namespace graphshard::client
