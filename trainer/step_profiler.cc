#include "trainer/step_profiler.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace graphshard::trainer {
namespace {

namespace kp = torch::autograd::profiler;
namespace pi = torch::profiler::impl;

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::set<pi::ActivityType> Activities(bool cuda) {
  if (cuda) return {pi::ActivityType::CPU, pi::ActivityType::CUDA};
  return {pi::ActivityType::CPU};
}

pi::ProfilerConfig Config() { return pi::ProfilerConfig(pi::ProfilerState::KINETO); }

struct Interval {
  double start_us;
  double end_us;
};

// An event's span in microseconds: LibTorch 2 counts nanoseconds, 1.13 microseconds.
Interval Span(const kp::KinetoEvent& e) {
#if TORCH_VERSION_MAJOR >= 2
  const double start = static_cast<double>(e.startNs()) * 1e-3;
  return {start, start + static_cast<double>(e.durationNs()) * 1e-3};
#else
  const double start = static_cast<double>(e.startUs());
  return {start, start + static_cast<double>(e.durationUs())};
#endif
}

// Microseconds covered by the union of `v` (sorted here).
double UnionUs(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.start_us < b.start_us; });
  double total = 0, open_start = 0, open_end = -1;
  for (const Interval& i : v) {
    if (i.start_us > open_end) {
      if (open_end > open_start) total += open_end - open_start;
      open_start = i.start_us;
      open_end = i.end_us;
    } else {
      open_end = std::max(open_end, i.end_us);
    }
  }
  if (open_end > open_start) total += open_end - open_start;
  return total;
}

// The summary of profile_rank<k>.json (see the header) from the profiler's events.
nlohmann::json Summarize(const std::vector<kp::KinetoEvent>& events, int64_t steps, double wall_s,
                         bool trace_saved) {
  std::vector<Interval> gpu;
  double first_gpu = 0, last_gpu = 0, nccl_us = 0, copy_us = 0;
  std::map<std::string, std::pair<int64_t, double>> kernels;  // name -> count, us
  std::map<std::string, double> phases;                       // gs::* -> us
  int64_t aten_ops = 0, launches = 0;
  for (const kp::KinetoEvent& e : events) {
    const std::string name = e.name();
    const Interval span = Span(e);
    const double start = span.start_us;
    const double dur = span.end_us - span.start_us;
    // The gs::* scopes appear on the GPU's timeline too (Kineto's GPU user annotations, from
    // the first to the last kernel of the scope): phases, not work.
    if (e.deviceType() == c10::DeviceType::CUDA && !absl::StartsWith(name, "gs::")) {
      if (gpu.empty() || start < first_gpu) first_gpu = start;
      last_gpu = std::max(last_gpu, start + dur);
      gpu.push_back(span);
      if (absl::StrContains(absl::AsciiStrToLower(name), "nccl")) nccl_us += dur;
      if (absl::StartsWith(name, "Memcpy") || absl::StartsWith(name, "Memset")) copy_us += dur;
      auto& k = kernels[name];
      ++k.first;
      k.second += dur;
    } else if (e.deviceType() != c10::DeviceType::CUDA && absl::StartsWith(name, "gs::")) {
      phases[name] += dur;
    } else if (absl::StartsWith(name, "aten::")) {
      ++aten_ops;
    } else if (absl::StrContains(name, "LaunchKernel")) {  // cudaLaunchKernel(ExC), cuLaunchKernel
      ++launches;
    }
  }
  const double per_step = 1e-3 / static_cast<double>(std::max<int64_t>(steps, 1));  // us -> ms
  nlohmann::json j;
  j["steps"] = steps;
  j["wall_ms_per_step"] = wall_s * 1e3 / static_cast<double>(std::max<int64_t>(steps, 1));
  j["gpu_span_ms_per_step"] = gpu.empty() ? 0.0 : (last_gpu - first_gpu) * per_step;
  j["gpu_busy_ms_per_step"] = UnionUs(gpu) * per_step;
  j["nccl_kernel_ms_per_step"] = nccl_us * per_step;
  j["copy_ms_per_step"] = copy_us * per_step;
  j["gpu_ops"] = static_cast<int64_t>(gpu.size());
  // Operators the CPU dispatched (nested ones too) and kernels it launched, per step: what the
  // CPU-bound step costs grows with.
  j["aten_ops_per_step"] =
      static_cast<double>(aten_ops) / static_cast<double>(std::max<int64_t>(steps, 1));
  j["kernel_launches_per_step"] =
      static_cast<double>(launches) / static_cast<double>(std::max<int64_t>(steps, 1));
  nlohmann::json ph = nlohmann::json::object();
  for (const auto& [name, us] : phases) ph[name] = us * per_step;
  j["cpu_phase_ms_per_step"] = ph;
  std::vector<std::pair<std::string, std::pair<int64_t, double>>> top(kernels.begin(),
                                                                      kernels.end());
  std::sort(top.begin(), top.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  nlohmann::json tk = nlohmann::json::array();
  for (size_t i = 0; i < std::min<size_t>(top.size(), 12); ++i) {
    tk.push_back({{"name", top[i].first.substr(0, 120)},
                  {"count", top[i].second.first},
                  {"ms_per_step", top[i].second.second * per_step}});
  }
  j["top_gpu_ops"] = tk;
  j["chrome_trace"] = trace_saved;
  return j;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StepProfiler>> StepProfiler::Create(const std::string& dir, int rank,
                                                                   int64_t epochs, bool cuda) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--profile-dir ", dir,
                     ": cannot create the directory: ", ec ? ec.message() : "not a directory"));
  }
  const std::string probe = absl::StrCat(dir, "/.write_probe_rank", rank);
  if (absl::Status s = common::WriteFileAtomically(probe, ""); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--profile-dir ", dir, ": not writable: ", s.message()));
  }
  std::filesystem::remove(probe, ec);
  const int64_t epoch = epochs >= 2 ? 2 : 1;
  return std::unique_ptr<StepProfiler>(new StepProfiler(dir, rank, epoch, cuda));
}

StepProfiler::StepProfiler(std::string dir, int rank, int64_t epoch, bool cuda)
    : dir_(std::move(dir)), rank_(rank), epoch_(epoch), cuda_(cuda) {}

StepProfiler::~StepProfiler() {
  if (running_) {
    try {
      kp::disableProfiler();
    } catch (const std::exception&) {  // the run is ending with an error of its own
    }
  }
}

absl::Status StepProfiler::BeforeStep(int64_t epoch, int64_t step, int64_t steps) {
  if (done_ || epoch != epoch_) return absl::OkStatus();
  if (running_) {
    if (steps_ >= kSteps) return Stop();
    ++steps_;
    return absl::OkStatus();
  }
  // The window's first step: kFirstStep, or earlier in an epoch too short for it.
  const int64_t first = std::max<int64_t>(0, std::min(kFirstStep, steps - kSteps));
  if (step != first) return absl::OkStatus();
  try {
    kp::prepareProfiler(Config(), Activities(cuda_));
    kp::enableProfiler(Config(), Activities(cuda_));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("--profile-dir: the profiler did not start: ", e.what()));
  }
  running_ = true;
  first_ = step;
  steps_ = 1;
  start_s_ = NowS();
  return absl::OkStatus();
}

absl::Status StepProfiler::EndEpoch(int64_t epoch) {
  if (running_ && epoch == epoch_) return Stop();
  return absl::OkStatus();
}

absl::Status StepProfiler::Stop() {
  const double wall_s = NowS() - start_s_;
  running_ = false;
  done_ = true;
  std::unique_ptr<kp::ProfilerResult> result;
  try {
    result = kp::disableProfiler();
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("--profile-dir: the profiler did not stop: ", e.what()));
  }
  const std::string trace = absl::StrCat(dir_, "/trace_rank", rank_, ".json");
  bool saved = false;
  try {
    result->save(trace);
    saved = true;
  } catch (const std::exception&) {  // a LibTorch without Kineto: no trace, the summary says so
  }
  nlohmann::json j = Summarize(result->events(), steps_, wall_s, saved);
  j["rank"] = rank_;
  j["epoch"] = epoch_;
  j["first_step"] = first_;
  const std::string summary = absl::StrCat(dir_, "/profile_rank", rank_, ".json");
  RETURN_IF_ERROR(common::WriteFileAtomically(summary, j.dump(1) + "\n"));
  std::cerr << "rank " << rank_ << ": profiled steps " << first_ << "-" << first_ + steps_ - 1
            << " of epoch " << epoch_ << ": " << summary
            << (saved ? absl::StrCat(", ", trace) : std::string(" (no Kineto: no trace)")) << "\n";
  return absl::OkStatus();
}

}  // namespace graphshard::trainer
