#include "common/feature_dtype.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace graphshard::common {

absl::StatusOr<FeatureDtype> ParseFeatureDtype(absl::string_view name) {
  std::string accepted;
  for (FeatureDtype dtype : kFeatureDtypes) {
    if (FeatureDtypeName(dtype) == name) return dtype;
    absl::StrAppend(&accepted, accepted.empty() ? "" : ", ", FeatureDtypeName(dtype));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown feature dtype '", name, "' (expected one of ", accepted, ")"));
}

}  // namespace graphshard::common
