#include "trainer/server_set.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace graphshard::trainer {
namespace {

class RegistryTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(testing::TempDir()) /
           testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(RegistryTest, ReadsHostPort) {
  Write("part_1", "127.0.0.1:4567\n");
  absl::StatusOr<std::string> e = ReadRegistryEntry(dir_.string(), 1);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(*e, "127.0.0.1:4567");
}

TEST_F(RegistryTest, MissingIsNotFoundAndGarbageIsInvalid) {
  EXPECT_EQ(ReadRegistryEntry(dir_.string(), 0).status().code(), absl::StatusCode::kNotFound);
  Write("part_0", "no port here\n");
  absl::StatusOr<std::string> e = ReadRegistryEntry(dir_.string(), 0);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("part_0"), absl::string_view::npos);
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
}  // namespace graphshard::trainer
