#include "server/deferred_unlink.h"

#include "absl/time/clock.h"
#include "shm/ring.h"

namespace graphshard::server {

DeferredUnlinks::DeferredUnlinks(absl::Duration grace)
    : grace_(grace), thread_([this] { Run(); }) {}

DeferredUnlinks::~DeferredUnlinks() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
  for (const auto& [deadline, name] : names_) shm::UnlinkShm(name);
}

void DeferredUnlinks::Add(std::vector<std::string> names) {
  if (names.empty()) return;
  const absl::Time deadline = absl::Now() + grace_;
  absl::MutexLock lock(&mu_);
  for (std::string& name : names) names_.emplace_back(deadline, std::move(name));
}

int64_t DeferredUnlinks::pending() {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(names_.size());
}

void DeferredUnlinks::Run() {
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    const absl::Time next =
        names_.empty() ? absl::Now() + absl::Seconds(1) : names_.front().first;
    mu_.AwaitWithDeadline(absl::Condition(&stop_), next);
    std::vector<std::string> due;
    const absl::Time now = absl::Now();
    while (!names_.empty() && names_.front().first <= now) {
      due.push_back(std::move(names_.front().second));
      names_.pop_front();
    }
    mu_.Unlock();
    for (const std::string& name : due) shm::UnlinkShm(name);
    mu_.Lock();
  }
}

}  // namespace graphshard::server
