#include "partitioner/internal/progress.h"

#include "absl/strings/str_format.h"

namespace graphshard::partitioner::internal {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Heartbeat::Heartbeat(std::ostream* log, std::string step, double interval_s) {
  if (log == nullptr) return;
  thread_ = std::thread([this, log, step = std::move(step), interval_s] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::duration<double>(interval_s), [&] { return stop_; })) {
      *log << absl::StrFormat("%s%s: still running, %.0f s\n", kProgressPrefix, step,
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
