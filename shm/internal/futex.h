#ifndef GRAPHSHARD_SHM_INTERNAL_FUTEX_H_
#define GRAPHSHARD_SHM_INTERNAL_FUTEX_H_

// Cross-process waits on 32-bit words in shared mappings (Linux futexes, not private: the words
// live in MAP_SHARED segments that the server and its trainers map at different addresses; the
// kernel matches them by file and offset).

#include <cstdint>
#include <vector>

#include "absl/time/time.h"

namespace graphshard::shm::internal {

struct FutexWord {
  const uint32_t* word;
  uint32_t expected;
};

// Blocks until one of `words` no longer holds its `expected` value and its changer called
// FutexWake on it, or `deadline` passes. Returns at once when a word already differs (the
// kernel compares under its own lock, so a wake between the caller's read and the wait is not
// lost), on a signal, or when a word's page is gone (the caller re-reads and decides). At most
// kFutexMaxWords words are watched (the first ones). On kernels without futex_waitv (before
// 5.16) it waits on the first word only, for at most 2 ms at a time.
inline constexpr int kFutexMaxWords = 128;
void FutexWaitAny(const std::vector<FutexWord>& words, absl::Time deadline);

// Wakes every waiter on `word` (call after changing it).
void FutexWake(const uint32_t* word);

}  // namespace graphshard::shm::internal

#endif  // GRAPHSHARD_SHM_INTERNAL_FUTEX_H_
