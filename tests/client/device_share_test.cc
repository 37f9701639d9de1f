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

}  // namespace
}  // namespace graphshard::client
