#ifndef GRAPHSHARD_COMMON_FEATURE_DTYPE_H_
#define GRAPHSHARD_COMMON_FEATURE_DTYPE_H_

// The element type of feature rows in transport (graphshard.proto's FeatureDtype), shared by the
// server's engine and the trainer, and the one home of its names ("float32", "float16",
// "bfloat16": the spellings of --feature-dtype, --peer-dtype and the Python loader's
// feature_dtype). The values equal the proto enum's; proto <-> enum is rpc/feature_dtype_proto.h.
// Thread-safe: constants and pure functions.

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphshard::common {

enum class FeatureDtype { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// Every dtype, in declaration order.
inline constexpr FeatureDtype kFeatureDtypes[] = {FeatureDtype::kFloat32, FeatureDtype::kFloat16,
                                                  FeatureDtype::kBFloat16};

// Bytes per element: 4 or 2.
constexpr int64_t FeatureBytes(FeatureDtype dtype) {
  return dtype == FeatureDtype::kFloat32 ? 4 : 2;
}

// "float32", "float16" or "bfloat16"; "?" for a value outside the enum.
constexpr absl::string_view FeatureDtypeName(FeatureDtype dtype) {
  switch (dtype) {
    case FeatureDtype::kFloat32:
      return "float32";
    case FeatureDtype::kFloat16:
      return "float16";
    case FeatureDtype::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

// The dtype named `name` (exactly one of FeatureDtypeName's spellings). InvalidArgument naming
// the bad value and the accepted names otherwise; callers prefix the flag or option it came from.
absl::StatusOr<FeatureDtype> ParseFeatureDtype(absl::string_view name);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_FEATURE_DTYPE_H_
