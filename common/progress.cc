#include "common/progress.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_format.h"

namespace graphshard::common {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// A terminal gets at most this many redraws a second.
constexpr double kTerminalRedrawS = 0.1;

std::string Amount(int64_t n, ProgressUnit unit) {
  return unit == ProgressUnit::kBytes ? HumanBytes(n) : HumanCount(n);
}

}  // namespace

bool IsTerminal(int fd) { return ::isatty(fd) == 1; }

std::string HumanCount(int64_t n) {
  if (n >= 10'000'000) return absl::StrFormat("%.1fM", static_cast<double>(n) / 1e6);
  if (n >= 10'000) return absl::StrFormat("%.0fk", static_cast<double>(n) / 1e3);
  return absl::StrFormat("%d", n);
}

std::string HumanBytes(int64_t n) {
  const double v = static_cast<double>(n);
  if (n >= 1'000'000'000) return absl::StrFormat("%.1f GB", v / 1e9);
  if (n >= 1'000'000) return absl::StrFormat("%.1f MB", v / 1e6);
  if (n >= 10'000) return absl::StrFormat("%.0f kB", v / 1e3);
  return absl::StrFormat("%d B", n);
}

std::string ProgressLine::Format(const std::string& step, int64_t done, int64_t total,
                                 double elapsed_s, ProgressUnit unit) {
  // Capped at 1: a total estimated from a manifest may leave out a few header bytes.
  const double frac =
      total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 0;
  // The ETA assumes the rest goes at the average rate so far; none before any work is done.
  const std::string eta =
      frac > 0 && frac < 1 ? absl::StrFormat(", ETA %.1f s", elapsed_s * (1 - frac) / frac) : "";
  return absl::StrFormat("%s: %.0f%% (%s/%s), %.1f s%s", step, 100 * frac, Amount(done, unit),
                         Amount(total, unit), elapsed_s, eta);
}

ProgressLine::ProgressLine(const ProgressOptions& options, std::string step, int64_t total,
                           ProgressUnit unit)
    : options_(options),
      step_(std::move(step)),
      total_(total),
      unit_(unit),
      start_(Clock::now()),
      last_(start_) {}

ProgressLine::~ProgressLine() {
  if (!finished_ && drawn_) *options_.log << "\n" << std::flush;
}

void ProgressLine::MaybePrint() {
  const Clock::time_point now = Clock::now();
  if (Seconds(now - last_) < (options_.terminal ? kTerminalRedrawS : options_.interval_s)) return;
  last_ = now;
  const std::string line = Format(step_, done_, total_, Seconds(now - start_), unit_);
  if (options_.terminal) {
    *options_.log << "\r" << options_.prefix << line << "\x1b[K" << std::flush;
    drawn_ = true;
  } else {
    *options_.log << options_.prefix << line << "\n" << std::flush;
  }
}

void ProgressLine::Finish() {
  if (finished_) return;
  finished_ = true;
  drawn_ = false;
  if (options_.log == nullptr) return;
  const std::string line =
      absl::StrFormat("%s%s: done (%s) in %.1f s", options_.prefix, step_, Amount(total_, unit_),
                      Seconds(Clock::now() - start_));
  if (options_.terminal) {
    // Overwrite the in-place line, then end it: what stays on screen is the final line.
    *options_.log << "\r" << line << "\x1b[K\n" << std::flush;
  } else {
    *options_.log << line << "\n" << std::flush;
  }
}

}  // namespace graphshard::common
