// ThreadSanitizer wrappers of absl::Mutex (cmake/tsan.cmake): the linker sends our code's calls
// of Lock, Unlock, ... here (ld --wrap=<mangled name>), and these tell TSan about the
// happens-before edge that the uninstrumented Abseil made: acquire after locking, release
// before unlocking. The mangled names come from CMake (GRAPHSHARD_ABSL_*).
#include <sanitizer/tsan_interface.h>

#define GRAPHSHARD_CAT2(a, b) a##b
#define GRAPHSHARD_CAT(a, b) GRAPHSHARD_CAT2(a, b)
#define GRAPHSHARD_REAL(sym) GRAPHSHARD_CAT(__real_, sym)
#define GRAPHSHARD_WRAP(sym) GRAPHSHARD_CAT(__wrap_, sym)

// A member function without arguments takes `this` as its only argument.
#define GRAPHSHARD_LOCK_WRAPPER(sym)                 \
  void GRAPHSHARD_REAL(sym)(void* mu);               \
  void GRAPHSHARD_WRAP(sym)(void* mu) {              \
    GRAPHSHARD_REAL(sym)(mu);                        \
    __tsan_acquire(mu);                              \
  }
#define GRAPHSHARD_UNLOCK_WRAPPER(sym)               \
  void GRAPHSHARD_REAL(sym)(void* mu);               \
  void GRAPHSHARD_WRAP(sym)(void* mu) {              \
    __tsan_release(mu);                              \
    GRAPHSHARD_REAL(sym)(mu);                        \
  }
#define GRAPHSHARD_TRY_LOCK_WRAPPER(sym)             \
  bool GRAPHSHARD_REAL(sym)(void* mu);               \
  bool GRAPHSHARD_WRAP(sym)(void* mu) {              \
    const bool locked = GRAPHSHARD_REAL(sym)(mu);    \
    if (locked) __tsan_acquire(mu);                  \
    return locked;                                   \
  }

extern "C" {
GRAPHSHARD_LOCK_WRAPPER(GRAPHSHARD_ABSL_LOCK)
GRAPHSHARD_LOCK_WRAPPER(GRAPHSHARD_ABSL_READER_LOCK)
GRAPHSHARD_UNLOCK_WRAPPER(GRAPHSHARD_ABSL_UNLOCK)
GRAPHSHARD_UNLOCK_WRAPPER(GRAPHSHARD_ABSL_READER_UNLOCK)
GRAPHSHARD_TRY_LOCK_WRAPPER(GRAPHSHARD_ABSL_TRY_LOCK)
GRAPHSHARD_TRY_LOCK_WRAPPER(GRAPHSHARD_ABSL_READER_TRY_LOCK)
}
