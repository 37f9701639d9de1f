#include "client/metrics.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace graphshard::client {

absl::StatusOr<std::unique_ptr<MetricsFile>> MetricsFile::Open(const std::string& path) {
  absl::StatusOr<std::unique_ptr<common::AppendFile>> file =
      common::AppendFile::Open(path, /*truncate=*/false);
  if (!file.ok()) {
    return absl::InternalError(absl::StrCat("--metrics-file ", file.status().message()));
  }
  return std::unique_ptr<MetricsFile>(new MetricsFile(*std::move(file)));
}

absl::Status MetricsFile::Write(const nlohmann::ordered_json& record) {
  return file_->Append(record.dump() + "\n");
}

ProgressReporter::ProgressReporter(std::ostream& out, bool terminal, double every_s)
    : out_(out), terminal_(terminal), every_s_(every_s) {}

void ProgressReporter::StartEpoch(int epoch, int epochs, int64_t steps, int64_t first_step) {
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps;
  first_step_ = first_step;
  epoch_start_ = last_print_ = Clock::now();
}

bool ProgressReporter::Due(int64_t step) const {
  const double since = std::chrono::duration<double>(Clock::now() - last_print_).count();
  return since >= (terminal_ ? 0.1 : every_s_) || (terminal_ && step + 1 == steps_);
}

void ProgressReporter::Step(int64_t step, double loss, double seeds) {
  const Clock::time_point now = Clock::now();
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - epoch_start_).count();
  const int64_t done = step + 1 - first_step_;
  const double per_step = done > 0 ? elapsed / static_cast<double>(done) : 0;
  const double left_steps = static_cast<double>(steps_ - step - 1) +
                            static_cast<double>(epochs_ - epoch_) * static_cast<double>(steps_);
  const double eta = per_step * left_steps;
  const std::string line =
      absl::StrFormat("epoch %d/%d step %d/%d loss %.4f %.0f seeds/s %.3f s/step ETA %dm%02ds",
                      epoch_, epochs_, step + 1, steps_, loss, elapsed > 0 ? seeds / elapsed : 0.0,
                      per_step, static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
  if (terminal_) {
    out_ << "\r" << line << "\x1b[K" << std::flush;
    drawn_ = true;
  } else {
    out_ << "progress: " << line << std::endl;
  }
}

void ProgressReporter::EndEpoch() {
  if (terminal_ && drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace graphshard::client
