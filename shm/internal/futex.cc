#include "shm/internal/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>

#include "absl/time/clock.h"

namespace graphshard::shm::internal {
namespace {

// futex_waitv (Linux 5.16) has one number on every architecture; older C headers lack it.
#ifdef SYS_futex_waitv
constexpr long kSysFutexWaitv = SYS_futex_waitv;
#else
constexpr long kSysFutexWaitv = 449;
#endif

// struct futex_waitv of <linux/futex.h>, spelled out for older kernel headers.
struct Waiter {
  uint64_t val;
  uint64_t uaddr;
  uint32_t flags;
  uint32_t reserved;
};
constexpr uint32_t kFutex32 = 2;  // FUTEX_32; no FUTEX_PRIVATE_FLAG: the words are shared

std::atomic<bool> have_waitv{true};

// `deadline` as an absolute CLOCK_MONOTONIC time (futex_waitv's clock).
timespec MonotonicDeadline(absl::Time deadline) {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const absl::Duration left = std::max(absl::ZeroDuration(), deadline - absl::Now());
  return absl::ToTimespec(absl::DurationFromTimespec(now) + left);
}

}  // namespace

void FutexWaitAny(const std::vector<FutexWord>& words, absl::Time deadline) {
  if (words.empty() || absl::Now() >= deadline) return;
  if (have_waitv.load(std::memory_order_relaxed)) {
    Waiter waiters[kFutexMaxWords] = {};
    const size_t n = std::min<size_t>(words.size(), kFutexMaxWords);
    for (size_t i = 0; i < n; ++i) {
      waiters[i].val = words[i].expected;
      waiters[i].uaddr = reinterpret_cast<uintptr_t>(words[i].word);
      waiters[i].flags = kFutex32;
    }
    const timespec until = MonotonicDeadline(deadline);
    if (::syscall(kSysFutexWaitv, waiters, static_cast<unsigned>(n), 0U, &until,
                  CLOCK_MONOTONIC) >= 0 ||
        errno != ENOSYS) {
      return;  // woken, timed out, a word differed (EAGAIN), a signal, or a page gone (EFAULT)
    }
    have_waitv.store(false, std::memory_order_relaxed);
  }
  // Old kernels: FUTEX_WAIT watches one word; bound each wait so that a change of another word
  // is seen within 2 ms.
  const absl::Duration left = std::min(deadline - absl::Now(), absl::Milliseconds(2));
  if (left <= absl::ZeroDuration()) return;
  const timespec relative = absl::ToTimespec(left);
  ::syscall(SYS_futex, words[0].word, FUTEX_WAIT, words[0].expected, &relative, nullptr, 0);
}

void FutexWake(const uint32_t* word) {
  ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace graphshard::shm::internal
