// The one home of the feature dtype's names (--feature-dtype, --peer-dtype, the Python loader's
// feature_dtype): every name parses back to its dtype, and a bad one is refused naming the value
// and the accepted names.
#include "common/feature_dtype.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace graphshard::common {
namespace {

using ::testing::HasSubstr;

TEST(FeatureDtypeTest, EveryNameParsesBackToItsDtype) {
  EXPECT_EQ(FeatureDtypeName(FeatureDtype::kFloat32), "float32");
  EXPECT_EQ(FeatureDtypeName(FeatureDtype::kFloat16), "float16");
  EXPECT_EQ(FeatureDtypeName(FeatureDtype::kBFloat16), "bfloat16");
  for (FeatureDtype dtype : kFeatureDtypes) {
    absl::StatusOr<FeatureDtype> parsed = ParseFeatureDtype(FeatureDtypeName(dtype));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, dtype);
  }
  EXPECT_EQ(FeatureBytes(FeatureDtype::kFloat32), 4);
  EXPECT_EQ(FeatureBytes(FeatureDtype::kBFloat16), 2);
}

TEST(FeatureDtypeTest, BadNameIsInvalidArgumentNamingItAndTheAcceptedNames) {
  for (const char* bad : {"int8", "", "Float32", "float32 ", "fp16"}) {
    absl::StatusOr<FeatureDtype> parsed = ParseFeatureDtype(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr(absl::StrCat("'", bad, "'")));
    EXPECT_THAT(parsed.status().message(), HasSubstr("float32, float16, bfloat16"));
  }
}

}  // namespace
}  // namespace graphshard::common
