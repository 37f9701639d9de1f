#include "server/ring_registry.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace graphshard::server {

RingRegistry::RingRegistry(std::string prefix, std::atomic<int64_t>* counter,
                           absl::Duration idle, int max_idle_rings)
    : prefix_(std::move(prefix)), counter_(counter), idle_(idle),
      max_idle_rings_(std::max(0, max_idle_rings)) {}

std::shared_ptr<shm::ShmRing> RingRegistry::NewRing(const std::string& key) {
  return std::make_shared<shm::ShmRing>(prefix_, counter_, key);
}

bool RingRegistry::Bind(uint64_t id, const std::string& key, absl::Time now) {
  for (auto it = bindings_.begin(); it != bindings_.end();) {
    it = now - it->second.last_used > kBindingTtl ? bindings_.erase(it) : std::next(it);
  }
  auto it = bindings_.find(id);
  if (it == bindings_.end()) {
    if (std::ssize(bindings_) >= kMaxBindings) {
      auto oldest = std::min_element(bindings_.begin(), bindings_.end(), [](auto& a, auto& b) {
        return a.second.last_used < b.second.last_used;
      });
      bindings_.erase(oldest);
    }
    bindings_[id] = Binding{key, now};
    return true;
  }
  // Constant time in the key's length: keys are secrets.
  const std::string& bound = it->second.key;
  unsigned char diff = bound.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < bound.size() && i < key.size(); ++i) {
    diff |= static_cast<unsigned char>(bound[i] ^ key[i]);
  }
  if (diff != 0) return false;
  it->second.last_used = now;
  return true;
}

absl::Status RingRegistry::Claim(uint64_t id, const std::string& key) {
  if (id == 0) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (!Bind(id, key, absl::Now())) {
    return absl::PermissionDeniedError(absl::StrCat(
        "shm_ring_id ", id, " belongs to another client (its shm_ring_key differs)"));
  }
  return absl::OkStatus();
}

std::shared_ptr<shm::ShmRing> RingRegistry::Acquire(uint64_t id, const std::string& key) {
  if (id == 0) return NewRing(key);
  absl::MutexLock lock(&mu_);
  if (!Bind(id, key, absl::Now())) return NewRing(key);
  DropIdle(absl::Now());
  auto it = rings_.find(id);
  if (it != rings_.end() && !it->second.in_use) {
    it->second.in_use = true;
    return it->second.ring;
  }
  // New client, or its ring is in use: a new ring, the client's from now on (the one in use
  // goes when its stream ends).
  Entry& e = rings_[id];
  e.ring = NewRing(key);
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
