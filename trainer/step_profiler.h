#ifndef GRAPHSHARD_TRAINER_STEP_PROFILER_H_
#define GRAPHSHARD_TRAINER_STEP_PROFILER_H_

// --profile-dir: LibTorch's profiler (Kineto) over a window of training steps of one rank, where
// the per-epoch timings (step, data wait, all-reduce) do not say why a step takes what it does.
// The window: kSteps steps from step kFirstStep of the second epoch (the first when the run has
// one; clamped to the epoch's steps), away from the streams' start and the epoch's end. At its
// end the rank writes into the directory:
//  - profile_rank<k>.json: the summary (what the benchmarks read): the window's wall time per
//    step; the GPU's busy time per step (the union of its kernels' intervals; no CUDA: 0), the
//    NCCL kernels' time (which includes a rank's wait for its peers), the named phases of the
//    step on the CPU (gs::next_batch, gs::forward_backward, gs::allreduce, gs::optimizer: their
//    wall time per step) and the kernels that took most GPU time;
//  - trace_rank<k>.json: the Chrome/Perfetto trace, where this LibTorch was built with Kineto
//    (PyTorch's is; Debian's 1.13 is not: then only the summary, which says so).
// One line per rank on stderr names both. Not thread-safe: the training thread calls it.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphshard::trainer {

class StepProfiler {
 public:
  static constexpr int64_t kFirstStep = 10;
  static constexpr int64_t kSteps = 20;

  // Creates `dir` if needed. InvalidArgument naming it when it cannot be created or written.
  static absl::StatusOr<std::unique_ptr<StepProfiler>> Create(const std::string& dir, int rank,
                                                              int64_t epochs, bool cuda);
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // Before step `step` of `epoch` (of `steps`): starts or stops the window. Stopping writes the
  // files (their errors: Internal naming the path).
  absl::Status BeforeStep(int64_t epoch, int64_t step, int64_t steps);
  // After the epoch's last step: stops a window still open (a short epoch) and writes.
  absl::Status EndEpoch(int64_t epoch);

 private:
  StepProfiler(std::string dir, int rank, int64_t epoch, bool cuda);
  absl::Status Stop();

  const std::string dir_;
  const int rank_;
  const int64_t epoch_;  // the profiled epoch
  const bool cuda_;
  bool running_ = false;
  bool done_ = false;
  int64_t first_ = 0;  // the window's first step
  int64_t steps_ = 0;  // steps profiled so far
  double start_s_ = 0;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_STEP_PROFILER_H_
