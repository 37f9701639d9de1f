#ifndef GRAPHSHARD_COMMON_THREAD_USAGE_H_
#define GRAPHSHARD_COMMON_THREAD_USAGE_H_

// What one stretch of work cost the calling thread: wall time, its user and system CPU time and
// its minor page faults (getrusage(RUSAGE_THREAD)). For statistics that tell computing from
// waiting (wall well above CPU: the thread blocked or was not scheduled) and from the kernel's
// share (page faults, mapping). Not thread-safe; one per thread.

#include <cstdint>

namespace graphshard::common {

struct ThreadUsage {
  double wall_s = 0, user_s = 0, sys_s = 0;
  int64_t minor_faults = 0;
  ThreadUsage& operator+=(const ThreadUsage& o);
  ThreadUsage& operator-=(const ThreadUsage& o);
};

// Counts from construction (or the last Lap) to Lap(), which adds the difference to `into`.
class ThreadUsageClock {
 public:
  ThreadUsageClock();
  void Lap(ThreadUsage* into);

 private:
  ThreadUsage last_;
};

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_THREAD_USAGE_H_
