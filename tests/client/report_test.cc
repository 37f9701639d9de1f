// The run's report: the stdout contract (epoch line, bare JSON summary), the metrics file's
// records, and the reductions over ranks (with a fake of two identical ranks).
#include "client/report.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/testing/file_size_limit.h"

namespace graphshard::client {
namespace {

// Two ranks that measured the same: sums double, maxima stay.
class TwinCommunicator final : public Communicator {
 public:
  explicit TwinCommunicator(int rank) : rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return 2; }
  const char* name() const override { return "twin"; }
  absl::Status AllReduce(absl::Span<float> data, ReduceOp op) override { return Twin(data, op); }
  absl::Status AllReduce(absl::Span<double> data, ReduceOp op) override { return Twin(data, op); }
  absl::Status AllReduce(absl::Span<int64_t> data, ReduceOp op) override { return Twin(data, op); }
  absl::Status Broadcast(absl::Span<float>, int) override { return absl::OkStatus(); }

 private:
  template <typename T>
  absl::Status Twin(absl::Span<T> data, ReduceOp op) {
    if (op == ReduceOp::kSum) {
      for (T& v : data) v *= 2;
    }
    return absl::OkStatus();
  }
  int rank_;
};

EpochReport Report() {
  EpochReport r;
  r.epoch = 3;
  r.loss = 0.123456;
  r.train_acc = 0.5;
  r.seeds_per_s = 1234.56;
  r.time_s = 1.5;
  return r;
}

TEST(EpochLine, ShowsAccuraciesOnlyOnEvaluatedEpochs) {
  EpochReport r = Report();
  EXPECT_EQ(EpochLine(r), "epoch 3 loss 0.1235 train_acc 0.5000 seeds_per_s 1234.6 time_s 1.50");
  r.evaluated = true;
  r.val_acc = 0.75;
  r.test_acc = 0.25;
  EXPECT_EQ(EpochLine(r),
            "epoch 3 loss 0.1235 train_acc 0.5000 val_acc 0.7500 test_acc 0.2500 seeds_per_s "
            "1234.6 time_s 1.50");
}

TEST(EpochRecord, HasTheDocumentedKeysInOrder) {
  EpochReport r = Report();
  const nlohmann::ordered_json record = EpochRecord(r);
  std::vector<std::string> keys;
  for (const auto& [key, value] : record.items()) keys.push_back(key);
  const std::vector<std::string> want = {"event",
                                         "epoch",
                                         "steps",
                                         "global_step",
                                         "loss",
                                         "train_acc",
                                         "seeds_per_s",
                                         "time_s",
                                         "step_time_s",
                                         "data_wait_s",
                                         "compute_s",
                                         "data_wait_fraction",
                                         "eval_s",
                                         "allreduce_s",
                                         "pipeline_stream_wait_s",
                                         "pipeline_stage_s",
                                         "pipeline_full_wait_s",
                                         "pipeline_h2d_s",
                                         "pipeline_pad_s",
                                         "pipeline_gather_s"};
  EXPECT_EQ(keys, want);
  r.evaluated = true;
  r.val_acc = 0.5;
  nlohmann::ordered_json evaluated = EpochRecord(r);
  EXPECT_EQ(evaluated["val_acc"], 0.5);
  EXPECT_TRUE(evaluated["test_acc"].is_null());  // evaluated, but an empty split
  EXPECT_EQ(evaluated.size(), want.size() + 2);
}

// A split that was not measured reads "n/a" in the line and is left out of the
// TensorBoard event, never a made-up 0.
TEST(EpochLine, ShowsNaForAnEmptySplit) {
  EpochReport r = Report();
  r.evaluated = true;
  r.val_acc = 0.75;
  EXPECT_EQ(EpochLine(r),
            "epoch 3 loss 0.1235 train_acc 0.5000 val_acc 0.7500 test_acc n/a seeds_per_s "
            "1234.6 time_s 1.50");
  std::vector<std::string> tags;
  for (const auto& [tag, value] : TensorBoardScalars(r)) tags.push_back(tag);
  EXPECT_NE(std::find(tags.begin(), tags.end(), "eval/val_acc"), tags.end());
  EXPECT_EQ(std::find(tags.begin(), tags.end(), "eval/test_acc"), tags.end());
}

// After --eval-every 0 the summary says null for the accuracies it never measured.
TEST(SummaryJson, AccuraciesAreNullWhenNoEvaluationRan) {
  TrainSummary s{.loss = 0.5, .train_acc = 0.75, .epochs = 2, .weights_fingerprint = "ab"};
  const nlohmann::ordered_json j = SummaryJson(s, 1);
  ASSERT_TRUE(j.contains("test_acc"));
  EXPECT_TRUE(j["test_acc"].is_null());
  EXPECT_TRUE(j["val_acc"].is_null());
  EXPECT_EQ(j["train_acc"], 0.75);
  EXPECT_TRUE(absl::StartsWith(j.dump(), R"({"test_acc":null,"val_acc":null,"train_acc":0.75,)"))
      << j.dump();
}

// The same through RunReport: epochs without evaluation leave the summary's accuracies null;
// an evaluation where no part has test seeds leaves test_acc null.
TEST(RunReport, SummaryCarriesOnlyMeasuredAccuracies) {
  TwinCommunicator comm(0);
  std::ostringstream out, log;
  TrainerOptions o;
  auto report = RunReport::Create(o, comm, out, log, false, {});
  ASSERT_TRUE(report.ok());
  EpochReport r{.epoch = 1};
  const EpochMeasurements m{.steps = 1, .seeds = 1, .time_s = 1};
  ASSERT_TRUE((*report)->ReduceEpoch(m, r).ok());
  ASSERT_TRUE((*report)->EndEpoch(r, m).ok());
  absl::StatusOr<TrainSummary> summary = (*report)->Finish("00");
  ASSERT_TRUE(summary.ok());
  EXPECT_FALSE(summary->val_acc.has_value());
  EXPECT_FALSE(summary->test_acc.has_value());
  EXPECT_TRUE(absl::StrContains(out.str(), R"("test_acc":null,"val_acc":null)")) << out.str();

  TwinCommunicator comm2(0);
  auto report2 = RunReport::Create(o, comm2, out, log, false, {});
  ASSERT_TRUE(report2.ok());
  EpochReport r2{.epoch = 1};
  ASSERT_TRUE((*report2)->ReduceEpoch(m, r2).ok());
  // 3 of 4 val seeds right on this rank (the twin doubles it); no test seeds anywhere.
  ASSERT_TRUE((*report2)->ReduceEvaluation(3, 4, 0, 0, r2).ok());
  EXPECT_DOUBLE_EQ(r2.val_acc.value_or(-1), 0.75);
  EXPECT_FALSE(r2.test_acc.has_value());
}

TEST(SummaryJson, IsOneBareObjectInTheDocumentedOrder) {
  TrainSummary s{.loss = 0.5,
                 .train_acc = 0.75,
                 .val_acc = 0.25,
                 .test_acc = 0.125,
                 .seeds_per_s = 100,
                 .data_wait_fraction = 0.5,
                 .step_time_s = 0.25,
                 .epochs = 4,
                 .weights_fingerprint = "0123456789abcdef"};
  EXPECT_EQ(SummaryJson(s, 2).dump(),
            R"({"test_acc":0.125,"val_acc":0.25,"train_acc":0.75,"loss":0.5,"epochs":4,)"
            R"("seeds_per_s":100.0,"world_size":2,"weights_fingerprint":"0123456789abcdef",)"
            R"("data_wait_fraction":0.5,"step_time_s":0.25})");
}

// When stderr is not a terminal, the trainer's progress is whole lines (one
// per --progress-every-s; 0 here: every step), each with the run's ETA, and no carriage return.
TEST(ProgressReporter, WritesPlainLinesWithAnEtaWhenNotATerminal) {
  std::ostringstream log;
  ProgressReporter p(log, /*terminal=*/false, /*every_s=*/0);
  p.StartEpoch(1, 2, 4, 0);
  for (int64_t step = 0; step < 4; ++step) {
    if (p.Due(step)) p.Step(step, 0.5, 10.0 * static_cast<double>(step + 1));
  }
  p.EndEpoch();
  std::vector<std::string> lines = absl::StrSplit(log.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u) << log.str();
  const std::regex line(
      R"(progress: epoch 1/2 step ([1-4])/4 loss 0\.5000 \d+ seeds/s \d+\.\d{3} s/step ETA \d+m\d\ds)");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, line)) << lines[i];
    EXPECT_EQ(m[1].str(), std::to_string(i + 1));
  }
  EXPECT_EQ(log.str().find('\r'), std::string::npos);
}

// On a terminal the same line is redrawn in place and ended once at the end of the epoch.
TEST(ProgressReporter, RedrawsOneLineOnATerminal) {
  std::ostringstream log;
  ProgressReporter p(log, /*terminal=*/true, /*every_s=*/10);
  p.StartEpoch(2, 2, 3, 0);
  p.Step(2, 0.25, 30);  // the last step is always drawn
  p.EndEpoch();
  EXPECT_TRUE(absl::StartsWith(log.str(), "\repoch 2/2 step 3/3 loss 0.2500")) << log.str();
  EXPECT_TRUE(absl::EndsWith(log.str(), "ETA 0m00s\x1b[K\n")) << log.str();
}

// Peak GPU memory appears in the epoch record, the rank's line and the summary when it was
// measured (CUDA), and nowhere on the CPU.
TEST(PeakGpuMemory, IsReportedOnlyWhenMeasured) {
  EpochReport r = Report();
  EpochMeasurements m;
  EXPECT_FALSE(EpochRecord(r).contains("peak_gpu_memory_mib"));
  EXPECT_FALSE(absl::StrContains(RankEpochLine(0, r, m), "GPU"));
  TrainSummary s;
  EXPECT_FALSE(SummaryJson(s, 1).contains("peak_gpu_memory_mib"));
  r.peak_gpu_memory_bytes = 1.5 * (1 << 30);
  m.peak_gpu_memory_bytes = 3 << 20;
  s.peak_gpu_memory_bytes = 5 << 20;
  EXPECT_EQ(EpochRecord(r)["peak_gpu_memory_mib"], 1536.0);
  EXPECT_TRUE(absl::StrContains(RankEpochLine(0, r, m), ", peak GPU memory 3.0 MiB\n"))
      << RankEpochLine(0, r, m);
  EXPECT_EQ(SummaryJson(s, 1)["peak_gpu_memory_mib"], 5.0);
}

// Rows copied from batches on the GPU (--reuse-rows) are a share of the host and remote rows,
// in the tiers' JSON and the rank's line, and absent where none were copied.
TEST(FeatureTiers, CopiedRowsAreAShareOfTheHostAndRemoteRows) {
  EpochReport r = Report();
  EpochMeasurements m;
  m.tiers = {.device_rows = 40, .host_rows = 20, .remote_rows = 40};
  EXPECT_FALSE(FeatureTiersJson(m.tiers).contains("reused_rate"));
  EXPECT_FALSE(absl::StrContains(RankEpochLine(0, r, m), "copied")) << RankEpochLine(0, r, m);
  m.tiers.reused_rows = 15;
  EXPECT_DOUBLE_EQ(FeatureTiersJson(m.tiers)["reused_rate"].get<double>(), 0.25);
  EXPECT_TRUE(absl::StrContains(RankEpochLine(0, r, m),
                                ", of the host and remote rows 25.0% copied from batches on the GPU"))
      << RankEpochLine(0, r, m);
}

// The largest of the ranks' peaks (a maximum, not a sum) reaches the epoch and the summary.
TEST(PeakGpuMemory, IsTheMaximumOverRanksAndEpochs) {
  std::ostringstream out, log;
  TwinCommunicator comm(0);
  TrainerOptions o;
  auto report = RunReport::Create(o, comm, out, log, false, {});
  ASSERT_TRUE(report.ok());
  for (const int64_t peak : {int64_t{7} << 20, int64_t{3} << 20}) {
    EpochReport r = Report();
    ASSERT_TRUE(
        (*report)->ReduceEpoch({.steps = 1, .time_s = 1, .peak_gpu_memory_bytes = peak}, r).ok());
    EXPECT_EQ(r.peak_gpu_memory_bytes, static_cast<double>(peak));
  }
  absl::StatusOr<TrainSummary> summary = (*report)->Finish("0123456789abcdef");
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->peak_gpu_memory_bytes, static_cast<double>(int64_t{7} << 20));
}

// Rank 0 of two, its report writing --metrics-file to a fresh file (removed at the end).
struct RankZeroWithMetrics {
  explicit RankZeroWithMetrics(const std::string& name)
      : path(::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid()) + ".jsonl") {
    std::remove(path.c_str());
    TrainerOptions o;
    o.metrics_file = path;
    report = RunReport::Create(o, comm, out, log, false, {.config = "cfg", .device = "cpu"});
  }
  ~RankZeroWithMetrics() { std::remove(path.c_str()); }
  RankZeroWithMetrics(const RankZeroWithMetrics&) = delete;
  RankZeroWithMetrics& operator=(const RankZeroWithMetrics&) = delete;

  // The `event` of each line of the metrics file, in order.
  std::vector<std::string> Events() const {
    std::ifstream in(path);
    std::vector<std::string> events;
    for (std::string line; std::getline(in, line);) {
      events.push_back(nlohmann::json::parse(line)["event"].get<std::string>());
    }
    return events;
  }

  const std::string path;
  TwinCommunicator comm{0};
  std::ostringstream out, log;
  absl::StatusOr<std::unique_ptr<RunReport>> report;
};

TEST(RunReport, RankZeroWritesLinesRecordsAndSummaryOverBothRanks) {
  RankZeroWithMetrics run("report_test");
  auto& [metrics, comm, out, log, report] = run;
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_NE((*report)->progress(), nullptr);

  const EpochMeasurements m{
      .steps = 4, .seeds = 100, .time_s = 2, .wait_s = 0.5, .allreduce_s = 0.25};
  EpochReport r{.epoch = 1, .global_step = 4};
  ASSERT_TRUE((*report)->ReduceEpoch(m, r).ok());
  RunReport::SetTraining(/*loss_sum=*/50, /*correct=*/150, /*seen=*/200, r);
  ASSERT_TRUE((*report)->ReduceEvaluation(3, 4, 1, 4, r).ok());
  EXPECT_DOUBLE_EQ(r.seeds_per_s, 100);  // 50 per s on each rank
  EXPECT_DOUBLE_EQ(r.time_s, 2);         // the maximum
  EXPECT_DOUBLE_EQ(r.step_time_s, 0.5);
  EXPECT_DOUBLE_EQ(r.data_wait_s, 0.5);  // means over ranks
  EXPECT_DOUBLE_EQ(r.compute_s, 1.5);
  EXPECT_DOUBLE_EQ(r.allreduce_s, 0.25);
  EXPECT_DOUBLE_EQ(r.data_wait_fraction, 0.25);
  EXPECT_DOUBLE_EQ(r.loss, 0.25);
  EXPECT_DOUBLE_EQ(r.train_acc, 0.75);
  EXPECT_DOUBLE_EQ(r.val_acc.value_or(-1), 0.75);
  EXPECT_DOUBLE_EQ(r.test_acc.value_or(-1), 0.25);
  ASSERT_TRUE((*report)->EndEpoch(r, m).ok());
  absl::StatusOr<TrainSummary> summary = (*report)->Finish("00000000000000ff");
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->epochs, 1);
  EXPECT_DOUBLE_EQ(summary->seeds_per_s, 100);
  EXPECT_DOUBLE_EQ(summary->val_acc.value_or(-1), 0.75);

  EXPECT_EQ(out.str(),
            "epoch 1 loss 0.2500 train_acc 0.7500 val_acc 0.7500 test_acc 0.2500 seeds_per_s "
            "100.0 time_s 2.00\n" +
                SummaryJson(*summary, 2).dump() + "\n");
  EXPECT_TRUE(absl::StrContains(log.str(), "rank 0 epoch 1: 4 steps, train 2.000s"));
  EXPECT_TRUE(absl::StrContains(log.str(), "rank 0 weights_fingerprint 00000000000000ff\n"));
  EXPECT_EQ(run.Events(), (std::vector<std::string>{"run", "epoch", "summary"}));
}

TEST(RunReport, OtherRanksOnlyLog) {
  TrainerOptions o;
  o.metrics_file = "/nonexistent/dir/metrics.jsonl";  // not opened off rank 0
  TwinCommunicator comm(1);
  std::ostringstream out, log;
  absl::StatusOr<std::unique_ptr<RunReport>> report =
      RunReport::Create(o, comm, out, log, false, {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ((*report)->progress(), nullptr);
  EpochReport r{.epoch = 1};
  ASSERT_TRUE((*report)->ReduceEpoch({.steps = 1, .time_s = 1}, r).ok());
  ASSERT_TRUE((*report)->EndEpoch(r, {.steps = 1, .time_s = 1}).ok());
  ASSERT_TRUE((*report)->Finish("00000000000000ff").ok());
  EXPECT_EQ(out.str(), "");
  EXPECT_TRUE(absl::StrContains(log.str(), "rank 1 weights_fingerprint 00000000000000ff"));
}

TEST(RunReport, UnwritableMetricsFileIsAnError) {
  TrainerOptions o;
  o.metrics_file = "/nonexistent/dir/metrics.jsonl";
  TwinCommunicator comm(0);
  std::ostringstream out, log;
  EXPECT_EQ(RunReport::Create(o, comm, out, log, false, {}).status().code(),
            absl::StatusCode::kInternal);
}

TEST(RunReport, AMetricsFileThatFillsUpMidRunIsAWarningAndTheRunGoesOn) {
  RankZeroWithMetrics run("report_full");
  auto& [metrics, comm, out, log, report] = run;
  ASSERT_TRUE(report.ok()) << report.status();
  const EpochMeasurements m{.steps = 4, .seeds = 100, .time_s = 2};
  {
    std::ifstream in(metrics, std::ios::ate);
    // Room for a few more bytes than the `run` record: the epoch record is cut short.
    testing::FileSizeLimit disk(static_cast<rlim_t>(in.tellg()) + 10);
    ASSERT_TRUE(disk.ok());
    for (int epoch = 1; epoch <= 2; ++epoch) {
      EpochReport r{.epoch = epoch, .global_step = 4 * epoch};
      ASSERT_TRUE((*report)->ReduceEpoch(m, r).ok());
      ASSERT_TRUE((*report)->EndEpoch(r, m).ok());  // not an error: the training goes on
    }
  }
  ASSERT_TRUE((*report)->Finish("00000000000000ff").ok());
  // Both epoch lines and the summary on stdout; one warning naming the file and why.
  EXPECT_TRUE(absl::StrContains(out.str(), "epoch 1 loss"));
  EXPECT_TRUE(absl::StrContains(out.str(), "epoch 2 loss"));
  EXPECT_TRUE(absl::StrContains(out.str(), "\"weights_fingerprint\":\"00000000000000ff\""));
  EXPECT_TRUE(absl::StrContains(log.str(), "warning: --metrics-file: " + metrics +
                                               ": write failed: File too large; no "
                                               "more records are written to it"))
      << log.str();
  const std::string logged = log.str();
  size_t warnings = 0;
  for (size_t at = logged.find("warning:"); at != std::string::npos;
       at = logged.find("warning:", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1u) << logged;
  // The file holds whole records only: the `run` record; nothing after the failure (the summary
  // was not written to it although the disk had room again).
  EXPECT_EQ(run.Events(), (std::vector<std::string>{"run"}));
}

}  // namespace
}  // namespace graphshard::client
