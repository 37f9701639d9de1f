#ifndef GRAPHSHARD_COMMON_HALF_ROWS_H_
#define GRAPHSHARD_COMMON_HALF_ROWS_H_

// Whole rows of float32 <-> IEEE half / bfloat16 (half.h's rules), vectorised where the CPU
// has them: F16C for half, AVX2 for bfloat16, chosen once at run time (the build stays
// portable x86-64; other CPUs and architectures use half.h's scalar loop). Every result is bit
// for bit half.h's, except NaN payloads: a NaN stays a NaN of the same sign. `dst` and `src`
// need no alignment and must not overlap. Thread-safe.

#include <cstdint>

namespace graphshard::common {

void FloatsToHalf(const float* src, int64_t n, char* dst);       // dst: n x 2 bytes
void FloatsToBFloat16(const float* src, int64_t n, char* dst);   // dst: n x 2 bytes
void HalfsToFloat(const char* src, int64_t n, char* dst);       // n x 2 -> n x 4 bytes
void BFloat16sToFloat(const char* src, int64_t n, char* dst);   // n x 2 -> n x 4 bytes

// Whether the vector paths are used on this CPU (for benchmarks and tests to report).
bool HalfRowsVectorised();

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_HALF_ROWS_H_
