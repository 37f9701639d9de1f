#include "common/poll.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/transient_error.h"

namespace graphshard::common {

absl::Duration PollPause(const PollOptions& options, int failed_tries) {
  const absl::Duration pause =
      options.interval + std::max(0, failed_tries - 1) * options.interval_step;
  return std::min(pause, options.max_interval);
}

absl::Status PollUntil(const PollOptions& options, absl::FunctionRef<absl::Status()> attempt) {
  for (int failed = 1;; ++failed) {
    absl::Status status = attempt();
    if (status.ok() || !IsTransientError(status)) return status;
    if (options.cancelled && options.cancelled()) return status;
    const absl::Time now = absl::Now();
    if (now >= options.deadline) {
      if (options.timeout_message.empty()) return status;
      return absl::Status(status.code(),
                          absl::StrCat(options.timeout_message, ": ", status.message()));
    }
    absl::SleepFor(std::min(PollPause(options, failed), options.deadline - now));
  }
}

}  // namespace graphshard::common
