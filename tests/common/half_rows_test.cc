#include "common/half_rows.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "common/half.h"
#include "common/rng.h"
#include "gtest/gtest.h"

namespace graphshard::common {
namespace {

// Values that exercise every branch of half.h: zeros, subnormals of both formats, rounding ties
// (odd and even), the largest finite values and what rounds past them, infinities, NaNs; then
// random bit patterns. An odd count, so that the scalar tail runs after the vector loop.
std::vector<float> Inputs() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, -65520.0f,
                          6.0e-8f, 5.96046448e-8f, 2.98e-8f, 6.1e-5f, 1.0e-40f, -1.0e-45f,
                          1.00048828125f, 1.00146484375f, 3.0e38f, -3.4e38f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), -std::nanf("")};
  SplitMix64 rng(7);
  for (int i = 0; i < 4001; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &bits, 4);
    v.push_back(f);
  }
  for (int i = -300; i <= 300; ++i) v.push_back(static_cast<float>(i) * 0.37f);
  return v;
}

uint16_t At(const std::vector<char>& bytes, size_t i) {
  uint16_t h;
  std::memcpy(&h, bytes.data() + 2 * i, 2);
  return h;
}

bool IsNanHalf(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool IsNanBFloat16(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

TEST(HalfRows, NarrowingEqualsTheScalarRuleBitForBit) {
  // On a CPU without AVX2/F16C both sides are the scalar rule; say so in the log.
  std::printf("vector path: %s\n", HalfRowsVectorised() ? "yes" : "no (scalar only)");
  const std::vector<float> in = Inputs();
  std::vector<char> half(in.size() * 2), bf16(in.size() * 2);
  // From an odd offset too: rows start anywhere in a batch.
  for (size_t offset : {size_t{0}, size_t{3}}) {
    const int64_t n = static_cast<int64_t>(in.size() - offset);
    FloatsToHalf(in.data() + offset, n, half.data());
    FloatsToBFloat16(in.data() + offset, n, bf16.data());
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      const float x = in[i + offset];
      if (std::isnan(x)) {
        EXPECT_TRUE(IsNanHalf(At(half, i))) << i;
        EXPECT_TRUE(IsNanBFloat16(At(bf16, i))) << i;
        EXPECT_EQ(At(half, i) & 0x8000u, FloatToHalf(x) & 0x8000u) << i;
        continue;
      }
      ASSERT_EQ(At(half, i), FloatToHalf(x)) << "half of " << x << " at " << i;
      ASSERT_EQ(At(bf16, i), FloatToBFloat16(x)) << "bfloat16 of " << x << " at " << i;
    }
  }
}

TEST(HalfRows, WideningIsExact) {
  // Every 16-bit pattern, then 3 more so that the tail runs.
  std::vector<char> in(2 * (65536 + 3));
  for (uint32_t i = 0; i < 65536 + 3; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    std::memcpy(in.data() + 2 * i, &h, 2);
  }
  const int64_t n = 65536 + 3;
  std::vector<char> from_half(4 * static_cast<size_t>(n)), from_bf16(4 * static_cast<size_t>(n));
  HalfsToFloat(in.data(), n, from_half.data());
  BFloat16sToFloat(in.data(), n, from_bf16.data());
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    float a, b;
    std::memcpy(&a, from_half.data() + 4 * i, 4);
    std::memcpy(&b, from_bf16.data() + 4 * i, 4);
    if (IsNanHalf(h)) {
      EXPECT_TRUE(std::isnan(a)) << h;
    } else {
      const float want = HalfToFloat(h);
      ASSERT_EQ(std::memcmp(&a, &want, 4), 0) << "half " << h;
    }
    if (IsNanBFloat16(h)) {
      EXPECT_TRUE(std::isnan(b)) << h;
    } else {
      const float want = BFloat16ToFloat(h);
      ASSERT_EQ(std::memcmp(&b, &want, 4), 0) << "bfloat16 " << h;
    }
  }
}

TEST(HalfRows, EmptyRowsWriteNothing) {
  char guard = 'x';
  FloatsToHalf(nullptr, 0, &guard);
  FloatsToBFloat16(nullptr, 0, &guard);
  HalfsToFloat(nullptr, 0, &guard);
  BFloat16sToFloat(nullptr, 0, &guard);
  EXPECT_EQ(guard, 'x');
}

}  // namespace
}  // namespace graphshard::common
