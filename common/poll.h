#ifndef GRAPHSHARD_COMMON_POLL_H_
#define GRAPHSHARD_COMMON_POLL_H_

// The one "try until a deadline" loop: graphshard-health waiting for SERVING, the trainer's
// search for a live server of a part (client/part_directory.h) and its resumption of a broken
// batch stream (client/resuming_stream.h). Thread-safe: PollUntil keeps no state between calls
// (it blocks the calling thread in its pauses).

#include <functional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace graphshard::common {

struct PollOptions {
  // Tries stop once it has passed (checked after each try: at least one is made, and the last
  // pause ends at the deadline, so a try is made there).
  absl::Time deadline = absl::InfinitePast();
  // The pause after the first failed try; each further one is `interval_step` longer, up to
  // `max_interval` (a linear backoff; a step of zero keeps the pause constant).
  absl::Duration interval = absl::Milliseconds(200);
  absl::Duration interval_step = absl::ZeroDuration();
  absl::Duration max_interval = absl::Seconds(1);
  // The timeout error's message is "<timeout_message>: <the last try's message>" (the last
  // try's message alone when empty).
  std::string timeout_message;
  // Checked after each failed try; true stops the poll with that try's status. May be empty.
  std::function<bool()> cancelled;
};

// The pause after the `failed_tries`-th failed try (1 = the first): interval +
// (failed_tries - 1) * interval_step, at most max_interval.
absl::Duration PollPause(const PollOptions& options, int failed_tries);

// Calls `attempt` until it returns OK (returns OK). A failure that IsTransientError
// (common/transient_error.h) accepts is tried again after a pause; any other failure is returned
// at once, as it is. When the deadline has passed after a transient failure, that last failure
// is returned with its code and options.timeout_message prefixed to its message.
absl::Status PollUntil(const PollOptions& options, absl::FunctionRef<absl::Status()> attempt);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_POLL_H_
