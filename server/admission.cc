#include "server/admission.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace graphshard::server {
namespace {

std::string Mib(int64_t bytes) { return absl::StrCat((bytes + (1 << 20) - 1) >> 20, " MiB"); }

}  // namespace

Admission::Reservation& Admission::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    client_ = std::move(other.client_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void Admission::Reservation::Release() {
  if (owner_ != nullptr && bytes_ > 0) owner_->Unreserve(client_, bytes_);
  owner_ = nullptr;
  bytes_ = 0;
}

void Admission::Unreserve(const std::string& client, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  total_bytes_ -= bytes;
  auto it = client_bytes_.find(client);
  if (it != client_bytes_.end() && (it->second -= bytes) <= 0) client_bytes_.erase(it);
}

absl::Status Admission::CheckMemory(const std::string& client, int64_t bytes,
                                    const std::string& what) {
  const int64_t mine = client_bytes_.count(client) ? client_bytes_[client] : 0;
  if (bytes > options_.client_memory_bytes - mine) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " may hold up to ", Mib(bytes), "; this client holds ", Mib(mine), " of its ",
        Mib(options_.client_memory_bytes),
        " (graphshard-server --client-memory-mib); retry later or ask for less"));
  }
  if (bytes > options_.memory_budget_bytes - total_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " may hold up to ", Mib(bytes), "; the server's requests hold ", Mib(total_bytes_),
        " of its ", Mib(options_.memory_budget_bytes),
        " (graphshard-server --memory-budget-mib); retry later or ask for less"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Admission::Reservation> Admission::Reserve(const std::string& client,
                                                          int64_t bytes,
                                                          const std::string& what,
                                                          absl::Time deadline) {
  int units = 0;
  return ReserveUpTo(client, std::max<int64_t>(bytes, 0), 1, what, &units, deadline);
}

bool Admission::Waiter::Ready() const {
  return *admission->waiting_.begin() == ticket &&
         bytes <= admission->options_.memory_budget_bytes - admission->total_bytes_;
}

absl::StatusOr<Admission::Reservation> Admission::ReserveUpTo(const std::string& client,
                                                              int64_t unit, int max_units,
                                                              const std::string& what,
                                                              int* units, absl::Time deadline) {
  unit = std::max<int64_t>(unit, 0);
  absl::MutexLock lock(&mu_);
  // Past the client's own cap, or more than the whole budget: waiting would not help.
  const int64_t held = client_bytes_.count(client) ? client_bytes_[client] : 0;
  if (unit > options_.client_memory_bytes - held || unit > options_.memory_budget_bytes) {
    return CheckMemory(client, unit, what);
  }
  // Past what the server has left, or behind others that wait: queue, first come first served.
  if (!waiting_.empty() || unit > options_.memory_budget_bytes - total_bytes_) {
    if (std::ssize(waiting_) >= options_.max_queued ||
        client_waiting_[client] >= options_.max_client_queued) {
      const int mine_waiting = client_waiting_[client];
      if (mine_waiting == 0) client_waiting_.erase(client);
      return absl::ResourceExhaustedError(absl::StrCat(
          what, " may hold up to ", Mib(unit), "; the server's requests hold ", Mib(total_bytes_),
          " of its ", Mib(options_.memory_budget_bytes),
          " (graphshard-server --memory-budget-mib) and ", waiting_.size(),
          " wait for it already (", mine_waiting, " of this client's); retry later"));
    }
    const uint64_t ticket = next_ticket_++;
    waiting_.insert(ticket);
    ++client_waiting_[client];
    const Waiter waiter{this, ticket, unit};
    const absl::Time start = absl::Now();
    const bool ready = mu_.AwaitWithDeadline(absl::Condition(&waiter, &Waiter::Ready),
                                             std::min(deadline, start + options_.memory_wait));
    waiting_.erase(ticket);
    if (--client_waiting_[client] <= 0) client_waiting_.erase(client);
    if (!ready) {
      return absl::ResourceExhaustedError(absl::StrCat(
          what, " may hold up to ", Mib(unit), "; the server's requests hold ", Mib(total_bytes_),
          " of its ", Mib(options_.memory_budget_bytes),
          " (graphshard-server --memory-budget-mib) and ", waiting_.size(),
          " more wait; waited ", absl::FormatDuration(absl::Trunc(absl::Now() - start,
                                                                  absl::Milliseconds(1))),
          " (--memory-wait-s); retry later or ask for less"));
    }
    // The client's other requests may have taken its share meanwhile.
    if (absl::Status ok = CheckMemory(client, unit, what); !ok.ok()) return ok;
  }
  const int64_t mine = client_bytes_.count(client) ? client_bytes_[client] : 0;
  const int64_t room = std::min(options_.client_memory_bytes - mine,
                                options_.memory_budget_bytes - total_bytes_);
  int n = std::max(1, max_units);
  if (unit > 0) n = static_cast<int>(std::clamp<int64_t>(room / unit, 1, n));
  if (absl::Status ok = CheckMemory(client, unit * n, what); !ok.ok()) return ok;
  Reservation r;
  r.owner_ = this;
  r.client_ = client;
  r.bytes_ = unit * n;
  total_bytes_ += r.bytes_;
  client_bytes_[client] += r.bytes_;
  *units = n;
  return r;
}

bool Admission::ReclaimIdle(const std::string& client) {
  const absl::Time now = absl::Now();
  auto oldest = slots_.end();
  for (auto it = slots_.begin(); it != slots_.end(); ++it) {
    if (!client.empty() && it->second.client != client) continue;
    if (now - it->second.waiting_since < options_.stream_idle) continue;
    if (oldest == slots_.end() || it->second.waiting_since < oldest->second.waiting_since) {
      oldest = it;
    }
  }
  if (oldest == slots_.end()) return false;
  Slot& slot = oldest->second;
  slot.cancel();
  // Its memory is released now (its builders stop at their next look, within milliseconds);
  // the reservation is settled here, under the lock, not through Release().
  Reservation& held = slot.held;
  if (held.owner_ != nullptr && held.bytes_ > 0) {
    total_bytes_ -= held.bytes_;
    auto it = client_bytes_.find(held.client_);
    if (it != client_bytes_.end() && (it->second -= held.bytes_) <= 0) client_bytes_.erase(it);
  }
  held.owner_ = nullptr;
  held.bytes_ = 0;
  if (--client_streams_[slot.client] <= 0) client_streams_.erase(slot.client);
  slots_.erase(oldest);
  return true;
}

absl::StatusOr<std::unique_ptr<Admission::StreamSlot>> Admission::OpenStream(
    const std::string& client, std::function<void()> cancel) {
  absl::MutexLock lock(&mu_);
  while (client_streams_[client] >= options_.max_client_streams) {
    if (!ReclaimIdle(client)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "this client has ", client_streams_[client], " streams open (limit ",
          options_.max_client_streams,
          ", graphshard-server --max-client-streams); none idle; retry later"));
    }
  }
  while (std::ssize(slots_) >= options_.max_streams) {
    if (!ReclaimIdle("")) {
      return absl::ResourceExhaustedError(absl::StrCat(
          slots_.size(), " streams are open (limit ", options_.max_streams,
          ", graphshard-server --max-streams); none idle for ",
          absl::FormatDuration(options_.stream_idle), "; retry later"));
    }
  }
  auto slot = std::unique_ptr<StreamSlot>(new StreamSlot());
  slot->owner_ = this;
  slot->client_ = client;
  slot->id_ = next_id_++;
  slots_[slot->id_] = Slot{client, std::move(cancel), absl::InfiniteFuture(), Reservation()};
  ++client_streams_[client];
  return slot;
}

void Admission::CloseSlot(uint64_t id) {
  Reservation held;
  {
    absl::MutexLock lock(&mu_);
    auto it = slots_.find(id);
    if (it == slots_.end()) return;  // reclaimed: already settled
    held = std::move(it->second.held);
    if (--client_streams_[it->second.client] <= 0) client_streams_.erase(it->second.client);
    slots_.erase(it);
  }
  // `held` releases here, outside the lock.
}

Admission::StreamSlot::~StreamSlot() { owner_->CloseSlot(id_); }

void Admission::StreamSlot::SetWaitingForClient(bool waiting) {
  absl::MutexLock lock(&owner_->mu_);
  auto it = owner_->slots_.find(id_);
  if (it != owner_->slots_.end()) {
    it->second.waiting_since = waiting ? absl::Now() : absl::InfiniteFuture();
  }
}

bool Admission::StreamSlot::reclaimed() {
  absl::MutexLock lock(&owner_->mu_);
  return owner_->slots_.count(id_) == 0;
}

void Admission::StreamSlot::Hold(Reservation reservation) {
  {
    absl::MutexLock lock(&owner_->mu_);
    auto it = owner_->slots_.find(id_);
    if (it != owner_->slots_.end()) {
      it->second.held = std::move(reservation);
      return;
    }
  }
  // Reclaimed already: `reservation` releases on return, outside the lock.
}

int Admission::open_streams() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(slots_.size());
}

int64_t Admission::reserved_bytes() {
  absl::MutexLock lock(&mu_);
  return total_bytes_;
}

int Admission::queued() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(waiting_.size());
}

}  // namespace graphshard::server
