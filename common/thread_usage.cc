#include "common/thread_usage.h"

#include <sys/resource.h>
#include <time.h>

namespace graphshard::common {
namespace {

double Seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
}

// Absolute counters of the calling thread.
ThreadUsage Now() {
  ThreadUsage u;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  u.wall_s = static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  rusage r{};
  if (getrusage(RUSAGE_THREAD, &r) == 0) {
    u.user_s = Seconds(r.ru_utime);
    u.sys_s = Seconds(r.ru_stime);
    u.minor_faults = r.ru_minflt;
  }
  return u;
}

}  // namespace

ThreadUsage& ThreadUsage::operator+=(const ThreadUsage& o) {
  wall_s += o.wall_s;
  user_s += o.user_s;
  sys_s += o.sys_s;
  minor_faults += o.minor_faults;
  return *this;
}

ThreadUsage& ThreadUsage::operator-=(const ThreadUsage& o) {
  wall_s -= o.wall_s;
  user_s -= o.user_s;
  sys_s -= o.sys_s;
  minor_faults -= o.minor_faults;
  return *this;
}

ThreadUsageClock::ThreadUsageClock() : last_(Now()) {}

void ThreadUsageClock::Lap(ThreadUsage* into) {
  const ThreadUsage now = Now();
  ThreadUsage lap = now;
  lap -= last_;
  *into += lap;
  last_ = now;
}

}  // namespace graphshard::common
