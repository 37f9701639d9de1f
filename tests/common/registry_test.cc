#include "common/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/scratch_dir.h"

namespace graphshard::common {
namespace {

using ::testing::HasSubstr;

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_.path() + "/registry"; }
  void Write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/" + name) << text;
  }
  testing::ScratchDir scratch_{"registry_test"};
  std::string dir_;  // inside scratch_, made by the code under test or by Write
};

TEST_F(RegistryTest, PublishedAddressIsLookedUpAndRemoved) {
  ASSERT_TRUE(PublishAddress(dir_, 1, "127.0.0.1:4567").ok());
  absl::StatusOr<std::string> a = LookupAddress(dir_, 1);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, "127.0.0.1:4567");
  RemoveAddress(dir_, 1);
  EXPECT_EQ(LookupAddress(dir_, 1).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RegistryTest, SurroundingWhitespaceIsAllowed) {
  Write("part_0", "  host.example:80 \n\n");
  absl::StatusOr<std::string> a = LookupAddress(dir_, 0);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, "host.example:80");
}

TEST_F(RegistryTest, MissingIsNotFoundAndGarbageIsDataLossNamingTheFile) {
  absl::StatusOr<std::string> missing = LookupAddress(dir_, 0);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("part_0"));
  for (const char* text : {"no port here\n", "host:0\n", "host:65536\n", ":80\n", "host:x\n"}) {
    Write("part_0", text);
    absl::StatusOr<std::string> a = LookupAddress(dir_, 0);
    EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss) << text;
    EXPECT_THAT(a.status().message(), HasSubstr("part_0"));
  }
}

TEST(ParseAddressListTest, SplitsAndNamesTheBadEntry) {
  absl::StatusOr<std::vector<std::string>> l = ParseAddressList("a:1, b:65535");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(*l, (std::vector<std::string>{"a:1", "b:65535"}));
  absl::StatusOr<std::vector<std::string>> bad = ParseAddressList("a:1,nohost");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("entry 1"));
  EXPECT_THAT(bad.status().message(), HasSubstr("nohost"));
  EXPECT_FALSE(ParseAddressList("h:99999").ok());
  EXPECT_FALSE(ParseAddressList("").ok());
}

TEST_F(RegistryTest, ReplicasAreListedInReplicaOrderNextToTheSingleEntryLayout) {
  ASSERT_TRUE(PublishAddress(dir_, 2, "h0:10").ok());
  ASSERT_TRUE(PublishAddress(dir_, 2, "h2:12", 2).ok());
  ASSERT_TRUE(PublishAddress(dir_, 2, "h1:11", 1).ok());
  ASSERT_TRUE(PublishAddress(dir_, 3, "other:13", 1).ok());  // another part
  Write("part_2.rx", "junk");                                // not a replica entry
  EXPECT_EQ(RegistryFile(dir_, 2, 1), dir_ + "/part_2.r1");
  absl::StatusOr<std::vector<std::string>> r = LookupReplicas(dir_, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (std::vector<std::string>{"h0:10", "h1:11", "h2:12"}));
  // Old readers keep seeing replica 0 under part_<k>.
  EXPECT_EQ(*LookupAddress(dir_, 2), "h0:10");
  // Without replica 0 the others still serve the part.
  RemoveAddress(dir_, 2);
  EXPECT_EQ(*LookupReplicas(dir_, 2), (std::vector<std::string>{"h1:11", "h2:12"}));
  EXPECT_EQ(LookupReplicas(dir_, 4).status().code(), absl::StatusCode::kNotFound);
  // A bad entry next to a good one is skipped: failover keeps the live replica.
  Write("part_2.r1", "/tmp/some/file/path\n");
  EXPECT_EQ(*LookupReplicas(dir_, 2), (std::vector<std::string>{"h2:12"}));
  // Only bad entries: DataLoss naming the first.
  Write("part_2.r2", "garbage\n");
  absl::StatusOr<std::vector<std::string>> bad = LookupReplicas(dir_, 2);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr("part_2.r1"));
}

// Only host:port (a name, an IPv4 address or a bracketed IPv6 one): no gRPC target syntax that
// would make a client dial something else (a unix socket, a DNS server, a list).
TEST_F(RegistryTest, OnlyHostPortAddressesAreAccepted) {
  for (const char* good :
       {"h0:10", "node-1.cluster_a:50051", "10.0.0.7:1", "[::1]:80", "[fe80::1]:65535"}) {
    Write("part_0", good);
    EXPECT_TRUE(LookupAddress(dir_, 0).ok()) << good;
  }
  for (const char* bad :
       {"unix:/tmp/graphshard.sock:80", "unix-abstract:x:1", "dns:///h:80", "ipv4:1.2.3.4:80",
        "h0:10+h1:11", "h/0:10", "[::1:80", "[zz]:80", "h 0:10"}) {
    Write("part_0", bad);
    absl::StatusOr<std::string> a = LookupAddress(dir_, 0);
    EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss) << bad;
    EXPECT_THAT(a.status().message(), HasSubstr("not host:port")) << bad;
  }
}

// graphshard-stats lists every server of a registry without knowing the number of parts.
TEST_F(RegistryTest, ListingHasEveryEntryByPartThenReplicaAndNothingElse) {
  ASSERT_TRUE(PublishAddress(dir_, 10, "h:1").ok());
  ASSERT_TRUE(PublishAddress(dir_, 2, "h:2", 1).ok());
  ASSERT_TRUE(PublishAddress(dir_, 2, "h:3").ok());
  Write("part_2.rx", "junk");
  Write("part_3.tmp.77", "h:4\n");  // a writer's temp file
  Write("part_x", "h:5\n");
  Write("notes", "h:6\n");
  absl::StatusOr<std::vector<RegistryEntry>> all = ListRegistry(dir_);
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<std::pair<int, int>> got;
  for (const RegistryEntry& e : *all) got.emplace_back(e.part, e.replica);
  EXPECT_EQ(got, (std::vector<std::pair<int, int>>{{2, 0}, {2, 1}, {10, 0}}));
  absl::StatusOr<std::vector<RegistryEntry>> missing = ListRegistry(dir_ + "/nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope"));
}

TEST(ParseAddressListTest, EntriesMayListReplicasJoinedWithPlus) {
  absl::StatusOr<std::vector<std::string>> l = ParseAddressList("a:1+c:3,b:2");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(*l, (std::vector<std::string>{"a:1+c:3", "b:2"}));
  EXPECT_EQ(*SplitReplicas("a:1+c:3"), (std::vector<std::string>{"a:1", "c:3"}));
  absl::StatusOr<std::vector<std::string>> bad = ParseAddressList("a:1,b:2+nohost");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("entry 1"));
  EXPECT_THAT(bad.status().message(), HasSubstr("nohost"));
}

}  // namespace
}  // namespace graphshard::common
