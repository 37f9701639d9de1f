#ifndef GRAPHSHARD_COMMON_PROGRESS_H_
#define GRAPHSHARD_COMMON_PROGRESS_H_

// Progress of one long operation with a known amount of work (partitioning a graph's parts,
// a server loading and checking its part), on a log stream:
//   <prefix><step>: 42% (52.0M/123.7M), 12.3 s, ETA 17.0 s
// On a terminal the line is redrawn in place (\r ... erase to end of line) at most 10 times a
// second; otherwise a new line is written every `interval_s` seconds (logs and CI read one line
// per interval, never a screenful of carriage returns). Both end with
//   <prefix><step>: done (123.7M) in 29.3 s
// (with units: "1.2 GB" for bytes) once the caller says the step is done (Finish): a step that
// fails prints no "done", so the error that follows is not contradicted. The trainer's per-step
// line (client/metrics.h) follows the same two modes. Not thread-safe: one thread drives a
// ProgressLine.

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace graphshard::common {

struct ProgressOptions {
  std::ostream* log = nullptr;  // nullptr = silent
  bool terminal = false;        // redraw in place (the log is a terminal: IsTerminal)
  double interval_s = 10;       // not a terminal: seconds between lines
  std::string prefix = {};      // e.g. "[graphshard-partition] "
};

// Whether file descriptor `fd` is a terminal (isatty).
bool IsTerminal(int fd);

enum class ProgressUnit { kCount, kBytes };

class ProgressLine {
 public:
  ProgressLine(const ProgressOptions& options, std::string step, int64_t total,
               ProgressUnit unit = ProgressUnit::kCount);
  // Without Finish (the step failed): ends an in-place line, so that what follows starts on a
  // line of its own; no "done" line.
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Cheap: the clock is read every 64th call, or at once for a large step (>= 1 MiB of work),
  // or every call (Set).
  void Add(int64_t n) {
    done_ += n;
    if (options_.log != nullptr && (++calls_ % 64 == 0 || n >= kLargeStep)) MaybePrint();
  }
  void Set(int64_t done) {
    done_ = done;
    if (options_.log != nullptr) MaybePrint();
  }
  // The step is done: the final line (once; later calls do nothing).
  void Finish();

  // The line for `done` of `total` after `elapsed_s` (no prefix, no newline): the format both
  // modes print, exposed for tests.
  static std::string Format(const std::string& step, int64_t done, int64_t total,
                            double elapsed_s, ProgressUnit unit);

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr int64_t kLargeStep = int64_t{1} << 20;
  void MaybePrint();

  ProgressOptions options_;
  std::string step_;
  int64_t total_;
  ProgressUnit unit_;
  int64_t done_ = 0;
  int64_t calls_ = 0;
  Clock::time_point start_;
  Clock::time_point last_;
  bool drawn_ = false;  // terminal: a line is on screen without its newline
  bool finished_ = false;
};

// "12.3M", "950k", "17"; bytes: "1.2 GB", "340.0 MB", "12 kB", "17 B" (decimal units).
std::string HumanCount(int64_t n);
std::string HumanBytes(int64_t n);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_PROGRESS_H_
