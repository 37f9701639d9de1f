#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_GEN_UTIL_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_GEN_UTIL_H_

// Random draws shared by the synthetic generators (SplitMix64 only: same output everywhere).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "common/rng.h"

namespace graphshard::partitioner::internal {

inline double Gaussian(common::SplitMix64& rng) {
  // Box-Muller; 1 - U avoids log(0).
  double u1 = 1.0 - rng.Uniform(), u2 = rng.Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Draws from a discrete distribution given by cumulative weights.
inline int64_t DrawCumulative(const std::vector<double>& cum, common::SplitMix64& rng) {
  double x = rng.Uniform() * cum.back();
  auto it = std::upper_bound(cum.begin(), cum.end(), x);
  return std::min<int64_t>(it - cum.begin(), std::ssize(cum) - 1);
}

template <typename T>
inline void Shuffle(std::vector<T>& v, common::SplitMix64& rng) {
  for (int64_t i = std::ssize(v) - 1; i > 0; --i) {
    std::swap(v[i], v[rng.Below(static_cast<uint64_t>(i) + 1)]);
  }
}

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_GEN_UTIL_H_
