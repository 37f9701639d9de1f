#include "rpc/status.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace graphshard::rpc {
namespace {

// Every canonical code, paired by name.
const std::vector<std::pair<absl::StatusCode, grpc::StatusCode>>& AllCodes() {
  static const auto* const codes = new std::vector<std::pair<absl::StatusCode, grpc::StatusCode>>{
      {absl::StatusCode::kCancelled, grpc::StatusCode::CANCELLED},
      {absl::StatusCode::kUnknown, grpc::StatusCode::UNKNOWN},
      {absl::StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {absl::StatusCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
      {absl::StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {absl::StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
      {absl::StatusCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
      {absl::StatusCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::StatusCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
      {absl::StatusCode::kAborted, grpc::StatusCode::ABORTED},
      {absl::StatusCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
      {absl::StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
      {absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL},
      {absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
      {absl::StatusCode::kUnauthenticated, grpc::StatusCode::UNAUTHENTICATED},
  };
  return *codes;
}

TEST(StatusMappingTest, EveryCodeMapsByNameAndRoundTrips) {
  for (const auto& [absl_code, grpc_code] : AllCodes()) {
    const std::string message = absl::StrCat("message of ", absl::StatusCodeToString(absl_code));
    const grpc::Status g = ToGrpcStatus(absl::Status(absl_code, message));
    EXPECT_EQ(g.error_code(), grpc_code) << message;
    EXPECT_EQ(g.error_message(), message);
    const absl::Status back = FromGrpcStatus(g);
    EXPECT_EQ(back.code(), absl_code) << message;
    EXPECT_EQ(back.message(), message);
    EXPECT_EQ(ToGrpcStatus(FromGrpcStatus(grpc::Status(grpc_code, message))).error_code(),
              grpc_code);
  }
}

TEST(StatusMappingTest, OkStaysOkAndUnknownCodesBecomeUnknown) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  EXPECT_EQ(ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(99), "x")).error_code(),
            grpc::StatusCode::UNKNOWN);
  // grpc::StatusCode has no fixed underlying type: its values are those of 6 signed bits, and
  // casting 99 to it is undefined behaviour (UBSan's -fsanitize=enum reports it). 31 is the
  // largest valid value that is no gRPC code.
  EXPECT_EQ(FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(31), "x")).code(),
            absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace graphshard::rpc
