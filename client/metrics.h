#ifndef GRAPHSHARD_CLIENT_METRICS_H_
#define GRAPHSHARD_CLIENT_METRICS_H_

// Run metrics of rank 0: a JSONL file (one JSON object per line, flushed per line: `run` at the
// start, one `epoch` record per epoch, `summary` at the end), and a progress reporter for the
// console. No Torch here. Not thread-safe: the training thread drives both.

#include <chrono>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "common/file_util.h"
#include "nlohmann/json.hpp"

namespace graphshard::client {

class MetricsFile {
 public:
  // Opens `path` for appending (a resumed run continues the same file). Internal naming the
  // path when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<MetricsFile>> Open(const std::string& path);
  // One line, written through, or none (common::AppendFile: a full disk leaves no half line);
  // Internal naming the path and the reason on a write error.
  absl::Status Write(const nlohmann::ordered_json& record);

 private:
  explicit MetricsFile(std::unique_ptr<common::AppendFile> file) : file_(std::move(file)) {}
  std::unique_ptr<common::AppendFile> file_;
};

// Step progress within an epoch, with the epoch's rate and an ETA for the run. On a terminal one
// line redrawn in place (\r, at most 10 times a second); otherwise a plain line every
// `every_s` seconds. Written to `out` (the trainer's stderr: stdout keeps its contract).
class ProgressReporter {
 public:
  ProgressReporter(std::ostream& out, bool terminal, double every_s);
  void StartEpoch(int epoch, int epochs, int64_t steps, int64_t first_step);
  // Whether a line is due after step `step` (0-based): call Step only then, so that the loss
  // (a device sync on a GPU) is read only when shown.
  bool Due(int64_t step) const;
  // After step `step` of the current epoch; `seeds` trained so far this epoch.
  void Step(int64_t step, double loss, double seeds);
  // Ends the in-place line (terminal) before other output.
  void EndEpoch();

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& out_;
  bool terminal_;
  double every_s_;
  int epoch_ = 0, epochs_ = 0;
  int64_t steps_ = 0, first_step_ = 0;
  Clock::time_point epoch_start_, last_print_;
  bool drawn_ = false;
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_METRICS_H_
