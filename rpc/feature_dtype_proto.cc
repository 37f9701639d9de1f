#include "rpc/feature_dtype_proto.h"

#include "absl/strings/str_cat.h"

namespace graphshard::rpc {

absl::StatusOr<common::FeatureDtype> FeatureDtypeFromProto(v1::FeatureDtype dtype) {
  switch (dtype) {
    case v1::FLOAT32:
      return common::FeatureDtype::kFloat32;
    case v1::FLOAT16:
      return common::FeatureDtype::kFloat16;
    case v1::BFLOAT16:
      return common::FeatureDtype::kBFloat16;
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown feature dtype ", static_cast<int>(dtype),
                                                 " (FLOAT32 = 0, FLOAT16 = 1, BFLOAT16 = 2)"));
}

v1::FeatureDtype FeatureDtypeToProto(common::FeatureDtype dtype) {
  switch (dtype) {
    case common::FeatureDtype::kFloat16:
      return v1::FLOAT16;
    case common::FeatureDtype::kBFloat16:
      return v1::BFLOAT16;
    case common::FeatureDtype::kFloat32:
      break;
  }
  return v1::FLOAT32;
}

}  // namespace graphshard::rpc
