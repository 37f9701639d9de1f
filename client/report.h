#ifndef GRAPHSHARD_CLIENT_REPORT_H_
#define GRAPHSHARD_CLIENT_REPORT_H_

// What a training run reports, and the arithmetic behind it (docs/DESIGN.md, "Command lines and
// output contract"; trainer/README.md, "Output" and "Metrics file"):
//  - rank 0, `out` (stdout): one line per epoch (EpochLine), then the summary as one bare JSON
//    object (SummaryJson);
//  - rank 0, --metrics-file: a `run` record, one `epoch` record per epoch, the `summary`;
//  - rank 0, --tensorboard: one event per epoch (TensorBoardScalars);
//  - every rank, `log` (stderr): its timing line per epoch and `rank R weights_fingerprint HEX`;
//  - rank 0, `log`: the progress line (metrics.h).
// Rates and waits are reduced over ranks here (sums, maxima, means). No Torch.

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/communicator.h"
#include "client/feature_tiers.h"
#include "client/link_task.h"
#include "client/metrics.h"
#include "client/options.h"
#include "client/tensorboard.h"
#include "nlohmann/json.hpp"

namespace graphshard::client {

// {"device_hit_rate", "host_hit_rate", "remote_hit_rate" (shares of the rows), "pcie_mib",
// "network_mib"}.
nlohmann::ordered_json FeatureTiersJson(const FeatureTierCounts& tiers);

struct TrainSummary {
  double loss = 0;       // last epoch, mean over the seeds of all ranks
  double train_acc = 0;  // last epoch
  // The last evaluation, over all ranks; nullopt (null in the JSON) when none ran (--eval-every
  // 0) or the split is empty on every part: only what was measured is reported.
  std::optional<double> val_acc = std::nullopt;
  std::optional<double> test_acc = std::nullopt;
  double seeds_per_s = 0;         // training seeds per second, summed over ranks
  double data_wait_fraction = 0;  // time blocked waiting for batches / training time (all ranks)
  double step_time_s = 0;         // mean training step time (slowest rank per epoch)
  int epochs = 0;
  std::string weights_fingerprint;    // FNV-1a 64 of all parameters' bytes, in order
  double peak_gpu_memory_bytes = -1;  // largest over epochs and ranks; -1 = not measured
  FeatureTierCounts tiers{};          // every epoch's, all ranks
  // --task link: the final evaluation's AUC, MRR and Hits@K (test_acc / val_acc: the share of
  // supervision edges classified right at probability 0.5).
  bool link = false;
  int hits_k = 10;
  LinkMetrics val_link{}, test_link{};
};

// One rank's measurements of one epoch's training (seconds).
struct EpochMeasurements {
  int64_t steps = 0;  // run by this process (a resumed epoch: the steps after the resume point)
  double seeds = 0;   // training seeds of this rank
  double time_s = 0;
  double wait_s = 0;       // blocked waiting for batches
  double allreduce_s = 0;  // gradient all-reduce calls (queueing it; waiting for the last)
  // The input pipeline's thread (input_pipeline.h, PipelineTimings).
  double pipeline_stream_wait_s = 0;
  double pipeline_stage_s = 0;
  double pipeline_full_wait_s = 0;
  // Parts of the staging: tensors and the copies to the GPU, padding, rows gathered.
  double pipeline_h2d_s = 0;
  double pipeline_pad_s = 0;
  double pipeline_gather_s = 0;
  // On a GPU: the high-water mark of its tensor memory during the epoch's training
  // (gpu_memory.h); -1 = not measured (CPU, or a LibTorch without CUDA).
  int64_t peak_gpu_memory_bytes = -1;
  FeatureTierCounts tiers{};  // this rank's training batches
};

// One epoch as reported, over all ranks.
struct EpochReport {
  int64_t epoch = 0;
  int64_t steps = 0;  // EpochMeasurements::steps
  int64_t global_step = 0;
  double loss = 0;  // mean over the epoch's seeds of all ranks
  double train_acc = 0;
  bool evaluated = false;
  // When evaluated; nullopt when the split is empty on every part.
  std::optional<double> val_acc = std::nullopt;
  std::optional<double> test_acc = std::nullopt;
  double seeds_per_s = 0;         // summed over ranks
  double time_s = 0;              // the slowest rank's training time
  double step_time_s = 0;         // time_s / steps
  double data_wait_fraction = 0;  // wait / time, summed over ranks
  double eval_s = 0;              // this rank's evaluation time
  // Means over ranks.
  double data_wait_s = 0;
  double compute_s = 0;
  double allreduce_s = 0;
  double pipeline_stream_wait_s = 0;
  double pipeline_stage_s = 0;
  double pipeline_full_wait_s = 0;
  double pipeline_h2d_s = 0;
  double pipeline_pad_s = 0;
  double pipeline_gather_s = 0;
  double peak_gpu_memory_bytes = -1;  // the largest of the ranks'; -1 = not measured
  FeatureTierCounts tiers{};          // summed over ranks
  // --task link, when evaluated: AUC, MRR, Hits@hits_k of val and test.
  bool link = false;
  int hits_k = 10;
  LinkMetrics val_link{}, test_link{};
};

// "epoch E loss L train_acc A [val_acc V test_acc T] seeds_per_s S time_s X"; an empty split's
// accuracy reads "n/a"; link prediction adds "val_auc test_auc val_mrr test_mrr test_hits@K"
// after test_acc.
std::string EpochLine(const EpochReport& report);
// The metrics file's `epoch` record: val_acc and test_acc only when evaluated (null for an
// empty split).
nlohmann::ordered_json EpochRecord(const EpochReport& report);
// The scalars of an epoch's TensorBoard event: train/loss, train/acc, eval/val_acc and
// eval/test_acc (when evaluated), perf/seeds_per_s, perf/data_wait_s, perf/data_wait_fraction,
// perf/epoch_time_s.
std::vector<std::pair<std::string, float>> TensorBoardScalars(const EpochReport& report);
// A rank's timing line on its log (with '\n').
std::string RankEpochLine(int rank, const EpochReport& report, const EpochMeasurements& local);
// The final JSON object, keys in docs/DESIGN.md's order; val_acc / test_acc null if not measured.
nlohmann::ordered_json SummaryJson(const TrainSummary& summary, int world_size);

// The metrics file's `run` record.
struct RunStart {
  std::string config;  // config_fingerprint.h
  std::string device;  // "cpu", "cuda:0"
  int64_t start_epoch = 1;
  int64_t start_step = 0;
};

// The report of one rank's run. Every rank makes the same calls in the same order (the
// reductions are collectives); rank 0 alone writes `out` and the metrics file. `out` and `log`
// must outlive it. Not thread-safe.
class RunReport {
 public:
  // Rank 0 opens --metrics-file (Internal naming it when it cannot) and writes the `run` record,
  // and draws progress on `log` (on a terminal when `terminal`).
  static absl::StatusOr<std::unique_ptr<RunReport>> Create(const TrainerOptions& options,
                                                           Communicator& comm, std::ostream& out,
                                                           std::ostream& log, bool terminal,
                                                           const RunStart& start);

  // Rank 0's progress line, nullptr elsewhere.
  ProgressReporter* progress() { return progress_.get(); }

  // Sets `report`'s loss and train_acc from the epoch's sums over ranks (sum of loss * seeds,
  // correct, seeds).
  static void SetTraining(double loss_sum, double correct, double seen, EpochReport& report);

  // Every rank (two collectives): reduces this rank's measurements into `report`'s rates and
  // times, and adds them to the run's totals.
  absl::Status ReduceEpoch(const EpochMeasurements& local, EpochReport& report);

  // Every rank (one collective): this rank's correct / total of val and test -> the accuracies
  // over all ranks.
  absl::Status ReduceEvaluation(double val_correct, double val_total, double test_correct,
                                double test_total, EpochReport& report);
  // Link prediction (two collectives): this rank's counts of val and test -> AUC, MRR, Hits@K
  // and accuracies over all ranks.
  absl::Status ReduceLinkEvaluation(LinkEvalCounts val, LinkEvalCounts test, int hits_k,
                                    EpochReport& report);

  // Every rank: its timing line on `log`; rank 0 also the epoch line on `out` and the `epoch`
  // record (and TensorBoard's scalars). A metrics file or event file that cannot be written
  // any more (the disk filled up) is not an error: a warning on `log` names it and why, no more
  // records go to it, and the run goes on (its epoch lines stay on `out`).
  absl::Status EndEpoch(const EpochReport& report, const EpochMeasurements& local);

  // Every rank (one collective): the run's totals, the weights fingerprint on `log`; rank 0 the
  // summary on `out` and as the `summary` record.
  absl::StatusOr<TrainSummary> Finish(std::string weights_fingerprint);

 private:
  RunReport(Communicator& comm, std::ostream& out, std::ostream& log)
      : comm_(comm), out_(out), log_(log) {}
  // After a write to a metrics sink mid-run: on an error, the warning on log_, and the sink
  // is dropped.
  template <typename Sink>
  void KeepOrDrop(absl::Status written, const char* flag, std::unique_ptr<Sink>& sink) {
    if (written.ok()) return;
    log_ << "warning: " << flag << ": " << written.message()
         << "; no more records are written to it, the training goes on" << std::endl;
    sink.reset();
  }

  Communicator& comm_;
  std::ostream& out_;
  std::ostream& log_;
  std::unique_ptr<MetricsFile> metrics_;          // rank 0, with --metrics-file
  std::unique_ptr<EventFileWriter> tensorboard_;  // rank 0, with --tensorboard
  std::unique_ptr<ProgressReporter> progress_;    // rank 0
  TrainSummary summary_;
  // This rank's totals over the epochs run.
  double total_seeds_ = 0, total_time_s_ = 0, total_wait_s_ = 0, total_step_time_s_ = 0;
  int timed_epochs_ = 0;
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_REPORT_H_
