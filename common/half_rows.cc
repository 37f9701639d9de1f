#include "common/half_rows.h"

#include <cstring>

#include "common/half.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define GRAPHSHARD_HALF_ROWS_X86 1
#endif

namespace graphshard::common {
namespace {

// half.h's rule, one element at a time: float32 -> 16 bits ...
template <uint16_t (*kNarrow)(float)>
void ScalarTo(const float* src, int64_t n, char* dst) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = kNarrow(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

// ... and 16 bits -> float32.
template <float (*kWiden)(uint16_t)>
void ScalarFrom(const char* src, int64_t n, char* dst) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    const float f = kWiden(h);
    std::memcpy(dst + 4 * i, &f, 4);
  }
}

constexpr auto ScalarToHalf = ScalarTo<FloatToHalf>;
constexpr auto ScalarToBFloat16 = ScalarTo<FloatToBFloat16>;
constexpr auto ScalarFromHalf = ScalarFrom<HalfToFloat>;
constexpr auto ScalarFromBFloat16 = ScalarFrom<BFloat16ToFloat>;

#ifdef GRAPHSHARD_HALF_ROWS_X86

// AVX2 (whose check includes the OS saving the YMM registers) and F16C (CPUID leaf 1, ECX bit
// 29; clang 14's __builtin_cpu_supports does not know "f16c").
bool CpuHasVectors() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 29)) != 0;
}

__attribute__((target("avx2,f16c"))) void VectorToHalf(const float* src, int64_t n, char* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), h);
  }
  ScalarToHalf(src + i, n - i, dst + 2 * i);
}

// half.h's FloatToBFloat16 on 8 lanes: round to nearest even by adding 0x7fff + the kept
// mantissa's lowest bit; a NaN keeps its top bits with the quiet bit set.
__attribute__((target("avx2"))) void VectorToBFloat16(const float* src, int64_t n, char* dst) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i high = _mm256_srli_epi32(u, 16);
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(high, one))), 16);
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i out = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet), is_nan);
    // 8 x 32 -> 8 x 16 bits (every lane is <= 0xffff): pack within lanes, then gather the halves.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(out, out), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), _mm256_castsi256_si128(packed));
  }
  ScalarToBFloat16(src + i, n - i, dst + 2 * i);
}

__attribute__((target("avx2,f16c"))) void VectorFromHalf(const char* src, int64_t n, char* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + 4 * i), _mm256_cvtph_ps(h));
  }
  ScalarFromHalf(src + 2 * i, n - i, dst + 4 * i);
}

__attribute__((target("avx2"))) void VectorFromBFloat16(const char* src, int64_t n, char* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    const __m256i wide = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 4 * i), wide);
  }
  ScalarFromBFloat16(src + 2 * i, n - i, dst + 4 * i);
}

#endif  // GRAPHSHARD_HALF_ROWS_X86

// The four conversions, chosen on first use (a function-local static: thread-safe, and no
// dependence on the order of static initialisation).
struct Kernels {
  bool vectorised;
  void (*to_half)(const float*, int64_t, char*);
  void (*to_bfloat16)(const float*, int64_t, char*);
  void (*from_half)(const char*, int64_t, char*);
  void (*from_bfloat16)(const char*, int64_t, char*);
};

Kernels Choose() {
#ifdef GRAPHSHARD_HALF_ROWS_X86
  if (CpuHasVectors()) {
    return {true, VectorToHalf, VectorToBFloat16, VectorFromHalf, VectorFromBFloat16};
  }
#endif
  return {false, ScalarToHalf, ScalarToBFloat16, ScalarFromHalf, ScalarFromBFloat16};
}

const Kernels& K() {
  static const Kernels kernels = Choose();
  return kernels;
}

}  // namespace

bool HalfRowsVectorised() { return K().vectorised; }
void FloatsToHalf(const float* src, int64_t n, char* dst) { K().to_half(src, n, dst); }
void FloatsToBFloat16(const float* src, int64_t n, char* dst) { K().to_bfloat16(src, n, dst); }
void HalfsToFloat(const char* src, int64_t n, char* dst) { K().from_half(src, n, dst); }
void BFloat16sToFloat(const char* src, int64_t n, char* dst) { K().from_bfloat16(src, n, dst); }

}  // namespace graphshard::common
