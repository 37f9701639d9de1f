#include "client/device_share.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphshard::client {
namespace {

using ::testing::HasSubstr;

TEST(SharesLoaded, OkWhereEveryRankPublishedAHandle) {
  // Handles are opaque bytes: one that starts like a failure marker or holds a NUL is still one.
  const std::vector<std::string> p = {PublishedShare("handle-0"),
                                      PublishedShare(std::string("E4\0x", 4))};
  EXPECT_TRUE(SharesLoaded(p, "paper", absl::OkStatus()).ok());
  EXPECT_EQ(SharedHandle(p[1]), std::string("E4\0x", 4));
}

TEST(SharesLoaded, AShareThatDidNotFitMakesEveryRankFallBackAlike) {
  const std::vector<std::string> p = {
      PublishedShare("h0"), PublishedShareFailure(absl::ResourceExhaustedError("out of memory"))};
  const absl::Status s = SharesLoaded(p, "paper", absl::OkStatus());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'paper'"));
}

TEST(SharesLoaded, AnyOtherFailureStopsEveryRank) {
  const std::vector<std::string> p = {
      PublishedShareFailure(absl::UnavailableError("a server went away")), PublishedShare("h1")};
  const absl::Status s = SharesLoaded(p, "paper", absl::OkStatus());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 0"));
}

TEST(SharesLoaded, TheFailingRankKeepsItsOwnError) {
  const absl::Status own = absl::ResourceExhaustedError("this GPU's share does not fit");
  const std::vector<std::string> p = {PublishedShare("h0"), PublishedShareFailure(own)};
  EXPECT_EQ(SharesLoaded(p, "paper", own), own);
}

TEST(SharesLoaded, AMalformedStringIsAFailureNotAHandle) {
  for (const std::string& bad :
       {std::string(), std::string("H"), std::string("Xabc"), std::string("Eeight")}) {
    EXPECT_EQ(SharedHandle(bad), "") << bad;
    const absl::Status s = SharesLoaded({PublishedShare("h0"), bad}, "paper", absl::OkStatus());
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << bad;
  }
}

TEST(WantVmmShares, VmmUnlessIpcIsAskedAndABadValueNamesTheVariable) {
  const auto env = [](absl::optional<std::string> v) -> EnvLookup {
    return [v](absl::string_view) { return v; };
  };
  EXPECT_TRUE(*WantVmmShares(env(absl::nullopt)));
  EXPECT_TRUE(*WantVmmShares(env("")));
  EXPECT_TRUE(*WantVmmShares(env("vmm")));
  EXPECT_FALSE(*WantVmmShares(env("ipc")));
  const absl::StatusOr<bool> bad = WantVmmShares(env("VMM "));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("GRAPHSHARD_SHARED_TIER_EXPORT=VMM "));
}

TEST(VmmShareHandle, RoundTripsAndRefusesAnythingElse) {
  const VmmShareHandle h{"graphshard-fd-0a1b", 4242, 29033021440ull};
  const std::string text = FormatVmmShareHandle(h);
  EXPECT_EQ(text, "vmm:graphshard-fd-0a1b:4242:29033021440");
  const absl::optional<VmmShareHandle> back = ParseVmmShareHandle(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->socket, h.socket);
  EXPECT_EQ(back->pid, h.pid);
  EXPECT_EQ(back->size, h.size);
  for (const std::string& bad :
       {std::string(64, 'v'), std::string("vmm:"), std::string("vmm::1:2"),
        std::string("vmm:s:0:2"), std::string("vmm:s:-1:2"), std::string("vmm:s:1:0"),
        std::string("vmm:s:1:2:3"), std::string("ipc:s:1:2"), std::string("vmm:s:x:2")}) {
    EXPECT_FALSE(ParseVmmShareHandle(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace graphshard::client
