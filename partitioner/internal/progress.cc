#include "partitioner/internal/progress.h"

#include "absl/strings/str_format.h"

namespace graphshard::partitioner::internal {
namespace {

constexpr char kPrefix[] = "[graphshard-partition] ";

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

std::string HumanCount(int64_t n) {
  if (n >= 10'000'000) return absl::StrFormat("%.1fM", static_cast<double>(n) / 1e6);
  if (n >= 10'000) return absl::StrFormat("%.0fk", static_cast<double>(n) / 1e3);
  return absl::StrFormat("%d", n);
}

Progress::Progress(std::ostream* log, std::string step, int64_t total, double interval_s)
    : log_(log),
      step_(std::move(step)),
      total_(total),
      interval_s_(interval_s),
      start_(Clock::now()),
      last_(start_) {}

Progress::~Progress() { Finish(); }

void Progress::MaybePrint() {
  const Clock::time_point now = Clock::now();
  if (Seconds(now - last_) < interval_s_) return;
  last_ = now;
  const double elapsed = Seconds(now - start_);
  const double frac = total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 0;
  std::string eta = frac > 0 ? absl::StrFormat(", ETA %.1f s", elapsed * (1 - frac) / frac) : "";
  *log_ << absl::StrFormat("%s%s: %.0f%% (%s/%s), %.1f s%s\n", kPrefix, step_, 100 * frac,
                           HumanCount(done_), HumanCount(total_), elapsed, eta)
        << std::flush;
}

void Progress::Finish() {
  if (finished_) return;
  finished_ = true;
  if (log_ == nullptr) return;
  *log_ << absl::StrFormat("%s%s: done (%s) in %.1f s\n", kPrefix, step_, HumanCount(total_),
                           Seconds(Clock::now() - start_))
        << std::flush;
}

Heartbeat::Heartbeat(std::ostream* log, std::string step, double interval_s) {
  if (log == nullptr) return;
  thread_ = std::thread([this, log, step = std::move(step), interval_s] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::duration<double>(interval_s), [&] { return stop_; })) {
      *log << absl::StrFormat("%s%s: still running, %.0f s\n", kPrefix, step,
                              Seconds(std::chrono::steady_clock::now() - start))
           << std::flush;
    }
  });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace graphshard::partitioner::internal
