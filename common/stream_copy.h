#ifndef GRAPHSHARD_COMMON_STREAM_COPY_H_
#define GRAPHSHARD_COMMON_STREAM_COPY_H_

// Copies for data written once and read elsewhere (another process through shared memory, a DMA
// engine, a socket): a batch's feature rows. Non-temporal stores skip reading each destination
// line before writing it and do not evict what the writer reads from the caches. They are
// weakly ordered: call StreamFence() before another thread may read what was written.

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace graphshard::common {

// memcpy with non-temporal stores where the destination and the size are 16-byte aligned (x86
// SSE2); a plain memcpy otherwise, or everywhere when built with -DGRAPHSHARD_PLAIN_ROW_STORES
// (for comparing the two: tests/bench/device_issue4_8.sh).
inline void StreamCopy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__) && !defined(GRAPHSHARD_PLAIN_ROW_STORES)
  if ((reinterpret_cast<uintptr_t>(dst) | bytes) % 16 == 0) {
    auto* d = static_cast<__m128i*>(dst);
    const auto* s = static_cast<const __m128i*>(src);
    for (size_t i = 0; i < bytes / 16; ++i) _mm_stream_si128(d + i, _mm_loadu_si128(s + i));
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

// Orders the StreamCopy stores before any later store (e.g. the release that publishes them).
inline void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_STREAM_COPY_H_
