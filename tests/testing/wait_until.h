#ifndef GRAPHSHARD_TESTS_TESTING_WAIT_UNTIL_H_
#define GRAPHSHARD_TESTS_TESTING_WAIT_UNTIL_H_

// Waiting in tests for something another thread or process makes true, instead of sleeping a
// fixed time and hoping it happened: a loaded machine (CI, other builds) makes any fixed sleep
// too short sometimes. The deadline is generous on purpose: a test fails only when the
// condition never holds, and a passing test waits only as long as the condition takes.
// Header-only; thread-compatible (the condition runs on the calling thread).

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace graphshard::testing {

// The deadline of a wait that should end within milliseconds on an idle machine.
inline constexpr absl::Duration kWaitDeadline = absl::Seconds(60);

// Calls `condition` until it returns true (true) or `deadline` from now has passed (false, after
// one last call), sleeping `step` between calls.
inline bool WaitUntil(const std::function<bool()>& condition,
                      absl::Duration deadline = kWaitDeadline,
                      absl::Duration step = absl::Milliseconds(10)) {
  const absl::Time end = absl::Now() + deadline;
  while (!condition()) {
    if (absl::Now() >= end) return condition();
    absl::SleepFor(step);
  }
  return true;
}

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_TESTING_WAIT_UNTIL_H_
