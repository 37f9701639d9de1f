// common::FeatureDtype <-> v1::FeatureDtype: every dtype goes through the proto and back, the
// enums' numbers agree, and an unknown number is refused naming it.
#include "rpc/feature_dtype_proto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace graphshard::rpc {
namespace {

using ::testing::HasSubstr;

TEST(FeatureDtypeProtoTest, EveryDtypeRoundTripsWithTheSameNumber) {
  for (common::FeatureDtype dtype : common::kFeatureDtypes) {
    const v1::FeatureDtype p = FeatureDtypeToProto(dtype);
    EXPECT_EQ(static_cast<int>(p), static_cast<int>(dtype)) << common::FeatureDtypeName(dtype);
    absl::StatusOr<common::FeatureDtype> back = FeatureDtypeFromProto(p);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, dtype);
  }
  EXPECT_EQ(FeatureDtypeToProto(common::FeatureDtype::kBFloat16), v1::BFLOAT16);
}

TEST(FeatureDtypeProtoTest, UnknownNumberIsInvalidArgumentNamingIt) {
  absl::StatusOr<common::FeatureDtype> bad =
      FeatureDtypeFromProto(static_cast<v1::FeatureDtype>(7));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown feature dtype 7"));
}

}  // namespace
}  // namespace graphshard::rpc
