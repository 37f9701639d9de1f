#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_PROGRESS_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_PROGRESS_H_

// Progress lines for long steps, on a log stream (stderr in the CLI; nullptr = silent):
//   [graphshard-partition] part 1/4 edges: 42% (52.0M/123.7M), 12.3 s, ETA 17.0 s
// common::ProgressLine with the partitioner's prefix: redrawn in place on a terminal, otherwise
// one line every `interval_s` seconds (--progress-every-s), and one when the step ends. Not
// thread-safe, except Heartbeat, which prints from its own thread while one opaque call (METIS,
// reading the input) runs.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "common/progress.h"

namespace graphshard::partitioner::internal {

inline constexpr char kProgressPrefix[] = "[graphshard-partition] ";

// Where and how the partitioner's steps report.
struct ProgressSink {
  std::ostream* log = nullptr;  // nullptr = silent
  bool terminal = false;
  double interval_s = 10;
};

class Progress : public common::ProgressLine {
 public:
  Progress(const ProgressSink& sink, std::string step, int64_t total)
      : common::ProgressLine({.log = sink.log,
                              .terminal = sink.terminal,
                              .interval_s = sink.interval_s,
                              .prefix = kProgressPrefix},
                             std::move(step), total) {}
};

// Prints "<step>: still running, N s" every `interval` seconds until destroyed.
class Heartbeat {
 public:
  Heartbeat(std::ostream* log, std::string step, double interval_s = 10.0);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

using common::HumanCount;

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_PROGRESS_H_
