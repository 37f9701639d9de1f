#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_PROGRESS_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_PROGRESS_H_

// Progress lines for long steps, on a log stream (stderr in the CLI; nullptr = silent):
//   [graphshard-partition] write part 1/4 edges: 42% (52.0M/123.7M), 12.3 s, ETA 17.0 s
// At most one line every `interval` seconds, and one when the step ends. Not thread-safe, except
// Heartbeat, which prints from its own thread while one opaque call (METIS) runs.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace graphshard::partitioner::internal {

class Progress {
 public:
  Progress(std::ostream* log, std::string step, int64_t total, double interval_s = 5.0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void Add(int64_t n) {
    done_ += n;
    if (log_ != nullptr && ++calls_ % 64 == 0) MaybePrint();
  }
  // Prints the final line ("done in X s"); called by the destructor if not before.
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  void MaybePrint();
  std::ostream* log_;
  std::string step_;
  int64_t total_;
  int64_t done_ = 0;
  int64_t calls_ = 0;
  double interval_s_;
  Clock::time_point start_;
  Clock::time_point last_;
  bool finished_ = false;
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

// "12.3M", "950k", "17".
std::string HumanCount(int64_t n);

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_PROGRESS_H_
