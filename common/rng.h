#ifndef GRAPHSHARD_COMMON_RNG_H_
#define GRAPHSHARD_COMMON_RNG_H_

// Small deterministic random number generation. Sampling derives one generator per (request
// seed, node) with MixSeed, so a draw depends only on those and not on thread count, batching
// or which server answers.

#include <cstdint>

// Host and CUDA device code alike (the trainer's GPU sampler draws as the servers do).
#ifdef __CUDACC__
#define GS_HOST_DEVICE __host__ __device__
#else
#define GS_HOST_DEVICE
#endif

namespace graphshard::common {

// SplitMix64 finaliser: a bijective 64-bit mix.
GS_HOST_DEVICE inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

GS_HOST_DEVICE inline uint64_t MixSeed(uint64_t a, uint64_t b) { return Mix64(a ^ Mix64(b)); }

// SplitMix64 generator; satisfies UniformRandomBitGenerator. Not thread-safe.
class SplitMix64 {
 public:
  using result_type = uint64_t;
  GS_HOST_DEVICE explicit SplitMix64(uint64_t seed) : state_(seed) {}
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t{0}; }
  GS_HOST_DEVICE uint64_t operator()() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0 (Lemire's multiply-shift; bias below 2^-32 for n < 2^32).
  GS_HOST_DEVICE uint64_t Below(uint64_t n) {
    __extension__ using U128 = unsigned __int128;  // GCC/Clang builtin; -Wpedantic otherwise
    return static_cast<uint64_t>((static_cast<U128>((*this)()) * n) >> 64);
  }
  // Uniform in [0, 1).
  GS_HOST_DEVICE double Uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_RNG_H_
