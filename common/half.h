#ifndef GRAPHSHARD_COMMON_HALF_H_
#define GRAPHSHARD_COMMON_HALF_H_

// float32 -> IEEE half / bfloat16 bit patterns, round to nearest even (as torch's .half() and
// .bfloat16()), and back. Used for the optional 16-bit feature transport.

#include <cstdint>
#include <cstring>

namespace graphshard::common {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t FloatToBFloat16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float BFloat16ToFloat(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

inline uint16_t FloatToHalf(float f) {
  uint32_t u = FloatBits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past max: inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): add 0.5 (as a float) so the FPU rounds the mantissa for us.
    float magic = BitsFloat(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (FloatBits(magic) - 0x3f000000u));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (abs >> 13));
}

inline float HalfToFloat(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_HALF_H_
