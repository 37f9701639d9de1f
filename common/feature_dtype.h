#ifndef GRAPHSHARD_COMMON_FEATURE_DTYPE_H_
#define GRAPHSHARD_COMMON_FEATURE_DTYPE_H_

// The element type of feature rows in transport (graphshard.proto's FeatureDtype), shared by the
// server's engine and the trainer. The values equal the proto enum's.

#include <cstdint>

namespace graphshard::common {

enum class FeatureDtype { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// Bytes per element: 4 or 2.
constexpr int64_t FeatureBytes(FeatureDtype dtype) {
  return dtype == FeatureDtype::kFloat32 ? 4 : 2;
}

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_FEATURE_DTYPE_H_
