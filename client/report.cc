#include "client/report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace graphshard::client {
namespace {

// MiB, rounded to 0.1.
double Mib(double bytes) { return std::round(bytes / (1 << 20) * 10) / 10; }

// A measured value, or null.
nlohmann::ordered_json OrNull(const std::optional<double>& v) {
  return v.has_value() ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

std::string OrNa(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%.4f", *v) : std::string("n/a");
}

// AUC, MRR and Hits@K of val and test; null for a split without edges.
void AddLinkMetrics(const LinkMetrics& val, const LinkMetrics& test, int hits_k,
                    nlohmann::ordered_json& j) {
  auto value = [](const LinkMetrics& m, double x) {
    return m.edges > 0 ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
  };
  j["val_auc"] = value(val, val.auc);
  j["test_auc"] = value(test, test.auc);
  j["val_mrr"] = value(val, val.mrr);
  j["test_mrr"] = value(test, test.mrr);
  j[absl::StrCat("val_hits@", hits_k)] = value(val, val.hits);
  j[absl::StrCat("test_hits@", hits_k)] = value(test, test.hits);
}

}  // namespace

std::string EpochLine(const EpochReport& r) {
  std::string line =
      absl::StrFormat("epoch %d loss %.4f train_acc %.4f", r.epoch, r.loss, r.train_acc);
  if (r.evaluated) {
    absl::StrAppend(&line, " val_acc ", OrNa(r.val_acc), " test_acc ", OrNa(r.test_acc));
    if (r.link) {
      absl::StrAppendFormat(&line, " val_auc %.4f test_auc %.4f val_mrr %.4f test_mrr %.4f",
                            r.val_link.auc, r.test_link.auc, r.val_link.mrr, r.test_link.mrr);
      absl::StrAppendFormat(&line, " test_hits@%d %.4f", r.hits_k, r.test_link.hits);
    }
  }
  absl::StrAppendFormat(&line, " seeds_per_s %.1f time_s %.2f", r.seeds_per_s, r.time_s);
  return line;
}

nlohmann::ordered_json EpochRecord(const EpochReport& r) {
  nlohmann::ordered_json rec = {{"event", "epoch"},
                                {"epoch", r.epoch},
                                {"steps", r.steps},
                                {"global_step", r.global_step},
                                {"loss", r.loss},
                                {"train_acc", r.train_acc},
                                {"seeds_per_s", r.seeds_per_s},
                                {"time_s", r.time_s},
                                {"step_time_s", r.step_time_s},
                                {"data_wait_s", r.data_wait_s},
                                {"compute_s", r.compute_s},
                                {"data_wait_fraction", r.data_wait_fraction},
                                {"eval_s", r.eval_s},
                                // Means over ranks: where the loop's and the pipeline's time went.
                                {"allreduce_s", r.allreduce_s},
                                {"pipeline_stream_wait_s", r.pipeline_stream_wait_s},
                                {"pipeline_stage_s", r.pipeline_stage_s},
                                {"pipeline_full_wait_s", r.pipeline_full_wait_s},
                                {"pipeline_h2d_s", r.pipeline_h2d_s},
                                {"pipeline_pad_s", r.pipeline_pad_s},
                                {"pipeline_gather_s", r.pipeline_gather_s}};
  if (r.evaluated) {
    rec["val_acc"] = OrNull(r.val_acc);
    rec["test_acc"] = OrNull(r.test_acc);
    if (r.link) AddLinkMetrics(r.val_link, r.test_link, r.hits_k, rec);
  }
  if (r.peak_gpu_memory_bytes >= 0) rec["peak_gpu_memory_mib"] = Mib(r.peak_gpu_memory_bytes);
  if (r.tiers.rows() > 0) rec["feature_tiers"] = FeatureTiersJson(r.tiers);
  return rec;
}

nlohmann::ordered_json FeatureTiersJson(const FeatureTierCounts& t) {
  const double rows = std::max(t.rows(), 1.0);
  nlohmann::ordered_json j = {{"device_hit_rate", t.device_rows / rows},
                              {"host_hit_rate", t.host_rows / rows},
                              {"remote_hit_rate", t.remote_rows / rows},
                              {"pcie_mib", Mib(t.pcie_bytes)},
                              {"network_mib", Mib(t.network_bytes)}};
  if (t.reused_rows > 0) {
    j["reused_rate"] = t.reused_rows / std::max(t.host_rows + t.remote_rows, 1.0);
  }
  if (t.peer_rows > 0) {  // the shared device tier
    j["peer_hit_rate"] = t.peer_rows / rows;
    j["peer_mib"] = Mib(t.peer_bytes);
  }
  return j;
}

std::string RankEpochLine(int rank, const EpochReport& r, const EpochMeasurements& m) {
  std::string line = absl::StrFormat(
      "rank %d epoch %d: %d steps, train %.3fs (step %.4fs, data wait %.3fs = %.1f%%, compute "
      "%.3fs), eval %.3fs",
      rank, r.epoch, m.steps, m.time_s, m.time_s / std::max<int64_t>(1, m.steps), m.wait_s,
      100 * m.wait_s / std::max(m.time_s, 1e-9), m.time_s - m.wait_s, r.eval_s);
  if (m.peak_gpu_memory_bytes >= 0) {
    absl::StrAppendFormat(&line, ", peak GPU memory %.1f MiB",
                          Mib(static_cast<double>(m.peak_gpu_memory_bytes)));
  }
  if (m.tiers.rows() > 0) {
    const double rows = m.tiers.rows();
    absl::StrAppendFormat(&line,
                          ", rows from device %.1f%% host %.1f%% remote %.1f%% (%.1f MiB over "
                          "PCIe, %.1f MiB over the network)",
                          100 * m.tiers.device_rows / rows, 100 * m.tiers.host_rows / rows,
                          100 * m.tiers.remote_rows / rows, Mib(m.tiers.pcie_bytes),
                          Mib(m.tiers.network_bytes));
    if (m.tiers.reused_rows > 0) {
      absl::StrAppendFormat(
          &line, ", of the host and remote rows %.1f%% copied from batches on the GPU",
          100 * m.tiers.reused_rows / std::max(m.tiers.host_rows + m.tiers.remote_rows, 1.0));
    }
    if (m.tiers.peer_rows > 0) {
      absl::StrAppendFormat(&line, ", from the host's other GPUs %.1f%% (%.1f MiB)",
                            100 * m.tiers.peer_rows / rows, Mib(m.tiers.peer_bytes));
    }
  }
  return line + "\n";
}

nlohmann::ordered_json SummaryJson(const TrainSummary& s, int world_size) {
  // Keys in the order of docs/DESIGN.md's example (ordered_json keeps insertion order).
  nlohmann::ordered_json j = {{"test_acc", OrNull(s.test_acc)},
                              {"val_acc", OrNull(s.val_acc)},
                              {"train_acc", s.train_acc},
                              {"loss", s.loss},
                              {"epochs", s.epochs},
                              {"seeds_per_s", s.seeds_per_s},
                              {"world_size", world_size},
                              {"weights_fingerprint", s.weights_fingerprint},
                              {"data_wait_fraction", s.data_wait_fraction},
                              {"step_time_s", s.step_time_s}};
  if (s.peak_gpu_memory_bytes >= 0) j["peak_gpu_memory_mib"] = Mib(s.peak_gpu_memory_bytes);
  if (s.tiers.rows() > 0) j["feature_tiers"] = FeatureTiersJson(s.tiers);
  if (s.link) AddLinkMetrics(s.val_link, s.test_link, s.hits_k, j);
  return j;
}

std::vector<std::pair<std::string, float>> TensorBoardScalars(const EpochReport& r) {
  std::vector<std::pair<std::string, float>> s = {{"train/loss", static_cast<float>(r.loss)},
                                                  {"train/acc", static_cast<float>(r.train_acc)}};
  if (r.val_acc.has_value()) s.emplace_back("eval/val_acc", static_cast<float>(*r.val_acc));
  if (r.test_acc.has_value()) s.emplace_back("eval/test_acc", static_cast<float>(*r.test_acc));
  if (r.evaluated && r.link) {
    s.emplace_back("eval/val_auc", static_cast<float>(r.val_link.auc));
    s.emplace_back("eval/test_auc", static_cast<float>(r.test_link.auc));
    s.emplace_back("eval/test_mrr", static_cast<float>(r.test_link.mrr));
  }
  s.emplace_back("perf/seeds_per_s", static_cast<float>(r.seeds_per_s));
  s.emplace_back("perf/data_wait_s", static_cast<float>(r.data_wait_s));
  s.emplace_back("perf/data_wait_fraction", static_cast<float>(r.data_wait_fraction));
  s.emplace_back("perf/epoch_time_s", static_cast<float>(r.time_s));
  return s;
}

absl::StatusOr<std::unique_ptr<RunReport>> RunReport::Create(const TrainerOptions& options,
                                                             Communicator& comm, std::ostream& out,
                                                             std::ostream& log, bool terminal,
                                                             const RunStart& start) {
  std::unique_ptr<RunReport> report(new RunReport(comm, out, log));
  if (comm.rank() != 0) return report;
  if (!options.metrics_file.empty()) {
    ASSIGN_OR_RETURN(report->metrics_, MetricsFile::Open(options.metrics_file));
    RETURN_IF_ERROR(report->metrics_->Write({{"event", "run"},
                                             {"config", start.config},
                                             {"world_size", comm.world_size()},
                                             {"device", start.device},
                                             {"backend", comm.name()},
                                             {"start_epoch", start.start_epoch},
                                             {"start_step", start.start_step}}));
  }
  if (!options.tensorboard_dir.empty()) {
    ASSIGN_OR_RETURN(report->tensorboard_, EventFileWriter::Create(options.tensorboard_dir));
    log << "tensorboard: " << report->tensorboard_->path() << "\n";
  }
  report->progress_ = std::make_unique<ProgressReporter>(log, terminal, options.progress_every_s);
  return report;
}

void RunReport::SetTraining(double loss_sum, double correct, double seen, EpochReport& r) {
  r.loss = seen > 0 ? loss_sum / seen : 0;
  r.train_acc = seen > 0 ? correct / seen : 0;
}

absl::Status RunReport::ReduceEpoch(const EpochMeasurements& m, EpochReport& r) {
  // Summed over ranks: [seeds/s, time, wait, all-reduce, the pipeline's stream wait, staging,
  // full wait, the feature tiers' rows and bytes, staging's parts, the peer tier's rows and
  // bytes, the rows copied from batches on the GPU]; the time also as the
  // maximum.
  double sums[18] = {m.seeds / std::max(m.time_s, 1e-9),
                     m.time_s,
                     m.wait_s,
                     m.allreduce_s,
                     m.pipeline_stream_wait_s,
                     m.pipeline_stage_s,
                     m.pipeline_full_wait_s,
                     m.tiers.device_rows,
                     m.tiers.host_rows,
                     m.tiers.remote_rows,
                     m.tiers.pcie_bytes,
                     m.tiers.network_bytes,
                     m.pipeline_h2d_s,
                     m.pipeline_pad_s,
                     m.pipeline_gather_s,
                     m.tiers.peer_rows,
                     m.tiers.peer_bytes,
                     m.tiers.reused_rows};
  RETURN_IF_ERROR(comm_.AllReduce(absl::MakeSpan(sums), ReduceOp::kSum));
  double maxima[2] = {m.time_s, static_cast<double>(m.peak_gpu_memory_bytes)};
  RETURN_IF_ERROR(comm_.AllReduce(absl::MakeSpan(maxima), ReduceOp::kMax));
  const double time_s = maxima[0];
  r.peak_gpu_memory_bytes = maxima[1];
  summary_.peak_gpu_memory_bytes = std::max(summary_.peak_gpu_memory_bytes, maxima[1]);
  const double n = comm_.world_size();
  r.steps = m.steps;
  r.seeds_per_s = sums[0];
  r.time_s = time_s;
  r.step_time_s = time_s / static_cast<double>(std::max<int64_t>(1, m.steps));
  r.data_wait_fraction = sums[1] > 0 ? sums[2] / sums[1] : 0;
  r.data_wait_s = sums[2] / n;
  r.compute_s = (sums[1] - sums[2]) / n;
  r.allreduce_s = sums[3] / n;
  r.pipeline_stream_wait_s = sums[4] / n;
  r.pipeline_stage_s = sums[5] / n;
  r.pipeline_full_wait_s = sums[6] / n;
  r.pipeline_h2d_s = sums[12] / n;
  r.pipeline_pad_s = sums[13] / n;
  r.pipeline_gather_s = sums[14] / n;
  r.tiers = {.device_rows = sums[7],
             .peer_rows = sums[15],
             .host_rows = sums[8],
             .reused_rows = sums[17],
             .remote_rows = sums[9],
             .pcie_bytes = sums[10],
             .network_bytes = sums[11],
             .peer_bytes = sums[16]};
  summary_.tiers += r.tiers;
  total_seeds_ += m.seeds;
  total_time_s_ += m.time_s;
  total_wait_s_ += m.wait_s;
  total_step_time_s_ += r.step_time_s;
  ++timed_epochs_;
  return absl::OkStatus();
}

absl::Status RunReport::ReduceEvaluation(double val_correct, double val_total, double test_correct,
                                         double test_total, EpochReport& r) {
  double counts[4] = {val_correct, val_total, test_correct, test_total};
  RETURN_IF_ERROR(comm_.AllReduce(absl::MakeSpan(counts), ReduceOp::kSum));
  r.evaluated = true;
  r.val_acc = counts[1] > 0 ? std::optional(counts[0] / counts[1]) : std::nullopt;
  r.test_acc = counts[3] > 0 ? std::optional(counts[2] / counts[3]) : std::nullopt;
  return absl::OkStatus();
}

absl::Status RunReport::ReduceLinkEvaluation(LinkEvalCounts val, LinkEvalCounts test, int hits_k,
                                             EpochReport& r) {
  RETURN_IF_ERROR(ReduceLinkCounts(comm_, val));
  RETURN_IF_ERROR(ReduceLinkCounts(comm_, test));
  r.evaluated = true;
  r.link = true;
  r.hits_k = hits_k;
  r.val_link = ComputeLinkMetrics(val);
  r.test_link = ComputeLinkMetrics(test);
  // An empty split measures nothing: null, as for node tasks.
  r.val_acc = val.total > 0 ? std::optional(r.val_link.acc) : std::nullopt;
  r.test_acc = test.total > 0 ? std::optional(r.test_link.acc) : std::nullopt;
  return absl::OkStatus();
}

absl::Status RunReport::EndEpoch(const EpochReport& r, const EpochMeasurements& m) {
  summary_.loss = r.loss;
  summary_.train_acc = r.train_acc;
  summary_.epochs = static_cast<int>(r.epoch);
  if (r.evaluated) {
    summary_.val_acc = r.val_acc;
    summary_.test_acc = r.test_acc;
    summary_.link = r.link;
    summary_.hits_k = r.hits_k;
    summary_.val_link = r.val_link;
    summary_.test_link = r.test_link;
  }
  log_ << RankEpochLine(comm_.rank(), r, m);
  if (comm_.rank() != 0) return absl::OkStatus();
  out_ << EpochLine(r) << std::endl;
  if (metrics_ != nullptr) KeepOrDrop(metrics_->Write(EpochRecord(r)), "--metrics-file", metrics_);
  if (tensorboard_ != nullptr) {
    KeepOrDrop(tensorboard_->WriteScalars(r.epoch, TensorBoardScalars(r)), "--tensorboard",
               tensorboard_);
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainSummary> RunReport::Finish(std::string weights_fingerprint) {
  double totals[3] = {total_seeds_ / std::max(total_time_s_, 1e-9), total_time_s_, total_wait_s_};
  RETURN_IF_ERROR(comm_.AllReduce(absl::MakeSpan(totals), ReduceOp::kSum));
  summary_.seeds_per_s = totals[0];
  summary_.data_wait_fraction = totals[1] > 0 ? totals[2] / totals[1] : 0;
  summary_.step_time_s = timed_epochs_ > 0 ? total_step_time_s_ / timed_epochs_ : 0;
  summary_.weights_fingerprint = std::move(weights_fingerprint);
  log_ << "rank " << comm_.rank() << " weights_fingerprint " << summary_.weights_fingerprint
       << std::endl;
  if (comm_.rank() == 0) {
    const nlohmann::ordered_json j = SummaryJson(summary_, comm_.world_size());
    out_ << j.dump() << std::endl;
    if (metrics_ != nullptr) {
      nlohmann::ordered_json rec = j;
      rec["event"] = "summary";
      KeepOrDrop(metrics_->Write(rec), "--metrics-file", metrics_);
    }
  }
  return summary_;
}

}  // namespace graphshard::client
