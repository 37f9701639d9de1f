// The one "may asking again cure it?" decision: failures of the other side or the path to it are
// transient (peers are looked up again, streams resumed, polls go on); failures of the request
// or the data are not.
#include "common/transient_error.h"

#include <gtest/gtest.h>

namespace graphshard::common {
namespace {

TEST(TransientErrorTest, FailuresOfTheServerOrConnectionAreTransient) {
  EXPECT_TRUE(IsTransientError(absl::UnavailableError("connection refused")));
  EXPECT_TRUE(IsTransientError(absl::DeadlineExceededError("stalled")));
  EXPECT_TRUE(IsTransientError(absl::CancelledError("server shutting down")));
  EXPECT_TRUE(IsTransientError(absl::AbortedError("")));
  EXPECT_TRUE(IsTransientError(absl::UnknownError("stream reset")));
  EXPECT_TRUE(IsTransientError(absl::ResourceExhaustedError("no free stream slot")));
}

TEST(TransientErrorTest, FailuresOfTheRequestOrTheDataAreNot) {
  EXPECT_FALSE(IsTransientError(absl::OkStatus()));
  EXPECT_FALSE(IsTransientError(absl::InvalidArgumentError("")));
  EXPECT_FALSE(IsTransientError(absl::OutOfRangeError("")));
  EXPECT_FALSE(IsTransientError(absl::NotFoundError("")));
  EXPECT_FALSE(IsTransientError(absl::AlreadyExistsError("")));
  EXPECT_FALSE(IsTransientError(absl::FailedPreconditionError("another graph")));
  EXPECT_FALSE(IsTransientError(absl::UnimplementedError("")));
  EXPECT_FALSE(IsTransientError(absl::InternalError("")));
  EXPECT_FALSE(IsTransientError(absl::PermissionDeniedError("")));
  EXPECT_FALSE(IsTransientError(absl::UnauthenticatedError("wrong token")));
  EXPECT_FALSE(IsTransientError(absl::DataLossError("a batch that fails its checks")));
}

}  // namespace
}  // namespace graphshard::common
