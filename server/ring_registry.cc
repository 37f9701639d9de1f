#include "server/ring_registry.h"

#include <algorithm>
#include <vector>

#include "absl/time/clock.h"

namespace graphshard::server {

RingRegistry::RingRegistry(std::string prefix, std::atomic<int64_t>* counter,
                           absl::Duration idle, int max_idle_rings)
    : prefix_(std::move(prefix)), counter_(counter), idle_(idle),
      max_idle_rings_(std::max(0, max_idle_rings)) {}

std::shared_ptr<shm::ShmRing> RingRegistry::NewRing() {
  return std::make_shared<shm::ShmRing>(prefix_, counter_);
}

std::shared_ptr<shm::ShmRing> RingRegistry::Acquire(uint64_t id) {
  if (id == 0) return NewRing();
  absl::MutexLock lock(&mu_);
  DropIdle(absl::Now());
  auto it = rings_.find(id);
  if (it != rings_.end() && !it->second.in_use) {
    it->second.in_use = true;
    return it->second.ring;
  }
  // New client, or its ring is in use: a new ring, the client's from now on (the one in use
  // goes when its stream ends).
  Entry& e = rings_[id];
  e.ring = NewRing();
  e.in_use = true;
  return e.ring;
}

void RingRegistry::Release(uint64_t id, const std::shared_ptr<shm::ShmRing>& ring,
                           bool failed) {
  if (failed) ring->UnlinkAll();
  if (id == 0) return;
  absl::MutexLock lock(&mu_);
  auto it = rings_.find(id);
  if (it != rings_.end() && it->second.ring == ring) {
    if (failed) {
      rings_.erase(it);
    } else {
      it->second.in_use = false;
      it->second.idle_since = absl::Now();
    }
  }
  DropIdle(absl::Now());
}

int64_t RingRegistry::size() {
  absl::MutexLock lock(&mu_);
  return std::ssize(rings_);
}

void RingRegistry::DropIdle(absl::Time now) {
  std::vector<std::pair<absl::Time, uint64_t>> idle;
  for (auto it = rings_.begin(); it != rings_.end();) {
    if (!it->second.in_use && now - it->second.idle_since > idle_) {
      it = rings_.erase(it);
      continue;
    }
    if (!it->second.in_use) idle.emplace_back(it->second.idle_since, it->first);
    ++it;
  }
  if (std::ssize(idle) <= max_idle_rings_) return;
  std::sort(idle.begin(), idle.end());
  for (size_t i = 0; i + static_cast<size_t>(max_idle_rings_) < idle.size(); ++i) {
    rings_.erase(idle[i].second);
  }
}

}  // namespace graphshard::server
