// The one "try until a deadline" loop: OK ends it, transient failures are tried again with a
// growing pause until the deadline (then the last one, code kept, message prefixed), other
// failures and cancellation end it at once.
#include "common/poll.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace graphshard::common {
namespace {

using ::testing::HasSubstr;

PollOptions Fast(absl::Duration within) {
  PollOptions o;
  o.deadline = absl::Now() + within;
  o.interval = absl::Milliseconds(1);
  return o;
}

TEST(PollUntilTest, OkOnTheFirstTryReturnsAtOnce) {
  int calls = 0;
  EXPECT_TRUE(PollUntil(Fast(absl::Seconds(30)), [&] {
                ++calls;
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(calls, 1);
}

TEST(PollUntilTest, TransientFailuresAreTriedAgainUntilOk) {
  int calls = 0;
  const absl::Status s = PollUntil(Fast(absl::Seconds(30)), [&] {
    return ++calls < 4 ? absl::UnavailableError("not yet") : absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(calls, 4);
}

TEST(PollUntilTest, AFailureThatIsNotTransientIsReturnedAtOnceAsItIs) {
  int calls = 0;
  const absl::Status s = PollUntil(Fast(absl::Seconds(30)), [&] {
    ++calls;
    return absl::FailedPreconditionError("another graph");
  });
  EXPECT_EQ(s, absl::FailedPreconditionError("another graph"));
  EXPECT_EQ(calls, 1);
}

TEST(PollUntilTest, AtTheDeadlineTheLastFailureKeepsItsCodeAndGetsThePrefix) {
  PollOptions o = Fast(absl::Milliseconds(200));
  o.timeout_message = "no live server for part 1";
  int calls = 0;
  const absl::Status s = PollUntil(o, [&] {
    ++calls;
    return absl::DeadlineExceededError(absl::StrCat("try ", calls));
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.message(), absl::StrCat("no live server for part 1: try ", calls));
  EXPECT_GE(calls, 2);
  // Without a prefix the last failure comes back as it is.
  o.deadline = absl::InfinitePast();
  o.timeout_message.clear();
  EXPECT_EQ(PollUntil(o, [] { return absl::UnavailableError("down"); }),
            absl::UnavailableError("down"));
}

TEST(PollUntilTest, ADeadlineAlreadyPastStillGetsOneTry) {
  PollOptions o;
  o.deadline = absl::InfinitePast();
  int calls = 0;
  const absl::Status s = PollUntil(o, [&] {
    ++calls;
    return absl::UnavailableError("connection refused");
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
}

TEST(PollUntilTest, CancelledStopsAfterTheTryWithItsStatus) {
  PollOptions o = Fast(absl::Seconds(30));
  int calls = 0;
  o.cancelled = [&calls] { return calls >= 2; };
  const absl::Status s = PollUntil(o, [&] {
    ++calls;
    return absl::UnavailableError(absl::StrCat("try ", calls));
  });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(s, absl::UnavailableError("try 2"));
}

// A pause longer than the time left ends at the deadline, where the last try is made.
TEST(PollUntilTest, TheLastPauseEndsAtTheDeadline) {
  PollOptions o;
  o.deadline = absl::Now() + absl::Seconds(1);
  o.interval = absl::Seconds(60);
  o.max_interval = absl::Seconds(60);
  int calls = 0;
  const absl::Time start = absl::Now();
  const absl::Status s = PollUntil(o, [&] {
    ++calls;
    return absl::UnavailableError("down");
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_GE(calls, 2);                                // one more try at the deadline
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));  // not after the 60 s pause
}

TEST(PollPauseTest, GrowsByTheStepUpToTheMaximum) {
  PollOptions o;
  o.interval = absl::Milliseconds(200);
  o.interval_step = absl::Milliseconds(100);
  o.max_interval = absl::Seconds(1);
  EXPECT_EQ(PollPause(o, 1), absl::Milliseconds(200));
  EXPECT_EQ(PollPause(o, 2), absl::Milliseconds(300));
  EXPECT_EQ(PollPause(o, 8), absl::Milliseconds(900));
  EXPECT_EQ(PollPause(o, 9), absl::Seconds(1));
  EXPECT_EQ(PollPause(o, 1000), absl::Seconds(1));
  o.interval_step = absl::ZeroDuration();  // constant
  EXPECT_EQ(PollPause(o, 1), PollPause(o, 50));
}

}  // namespace
}  // namespace graphshard::common
