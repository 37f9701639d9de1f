#include "client/internal/store_table.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace graphshard::client {
namespace {

// A waiting call looks at its client this often (a client that left frees its slot).
constexpr absl::Duration kPollCancelled = absl::Milliseconds(50);

// At most this many keys are named in a message.
constexpr size_t kKeysNamed = 8;

std::string Quoted(const std::string& key) {
  // Keys are bytes: shown escaped, shortened.
  std::string shown = key.size() > 200 ? absl::StrCat(key.substr(0, 200), "...") : key;
  return absl::StrCat("'", absl::CHexEscape(shown), "'");
}

std::string NameKeys(const std::vector<std::string>& keys) {
  std::vector<std::string> named;
  for (size_t i = 0; i < keys.size() && i < kKeysNamed; ++i) named.push_back(Quoted(keys[i]));
  std::string out = absl::StrJoin(named, ", ");
  if (keys.size() > kKeysNamed) absl::StrAppend(&out, " and ", keys.size() - kKeysNamed, " more");
  return out;
}

}  // namespace

absl::Status StoreTable::CheckKey(const std::string& key) const {
  if (static_cast<int64_t>(key.size()) > limits_.max_key_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("rendezvous store: a key of ", key.size(),
                                                     " bytes is over the limit of ",
                                                     limits_.max_key_bytes));
  }
  return absl::OkStatus();
}

absl::Status StoreTable::CheckKeys(const std::vector<std::string>& keys) const {
  if (static_cast<int64_t>(keys.size()) > limits_.max_keys_per_call) {
    return absl::ResourceExhaustedError(absl::StrCat("rendezvous store: ", keys.size(),
                                                     " keys in one call, over the limit of ",
                                                     limits_.max_keys_per_call));
  }
  for (const std::string& key : keys) RETURN_IF_ERROR(CheckKey(key));
  return absl::OkStatus();
}

absl::Status StoreTable::PutLocked(const std::string& key, std::string value) {
  RETURN_IF_ERROR(CheckKey(key));
  if (static_cast<int64_t>(value.size()) > limits_.max_value_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("rendezvous store: the value of ", Quoted(key), " has ", value.size(),
                     " bytes, over the limit of ", limits_.max_value_bytes));
  }
  auto it = values_.find(key);
  const int64_t old_bytes =
      it == values_.end() ? 0 : static_cast<int64_t>(key.size() + it->second.size());
  const int64_t new_bytes = static_cast<int64_t>(key.size() + value.size());
  if (it == values_.end() && static_cast<int64_t>(values_.size()) >= limits_.max_keys) {
    return absl::ResourceExhaustedError(absl::StrCat("rendezvous store: already ", values_.size(),
                                                     " keys, the limit; ", Quoted(key),
                                                     " not set"));
  }
  if (total_bytes_ - old_bytes + new_bytes > limits_.max_total_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("rendezvous store: setting ", Quoted(key), " would make it hold ",
                     total_bytes_ - old_bytes + new_bytes, " bytes, over the limit of ",
                     limits_.max_total_bytes));
  }
  total_bytes_ += new_bytes - old_bytes;
  values_[key] = std::move(value);
  return absl::OkStatus();
}

absl::Status StoreTable::Set(const std::string& key, const std::string& value) {
  absl::MutexLock lock(&mu_);
  return PutLocked(key, value);
}

absl::StatusOr<std::string> StoreTable::CompareSet(const std::string& key,
                                                   const std::string& expected,
                                                   const std::string& desired) {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(key);
  if (it == values_.end()) {
    if (!expected.empty()) return std::string();
    RETURN_IF_ERROR(PutLocked(key, desired));
    return desired;
  }
  if (it->second != expected) return it->second;
  RETURN_IF_ERROR(PutLocked(key, desired));
  return desired;
}

absl::StatusOr<int64_t> StoreTable::Add(const std::string& key, int64_t delta) {
  absl::MutexLock lock(&mu_);
  int64_t value = 0;
  if (auto it = values_.find(key); it != values_.end() && !absl::SimpleAtoi(it->second, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous store: add to ", Quoted(key), ", which holds no number"));
  }
  if ((delta > 0 && value > std::numeric_limits<int64_t>::max() - delta) ||
      (delta < 0 && value < std::numeric_limits<int64_t>::min() - delta)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous store: add ", delta, " to ", Quoted(key), " overflows"));
  }
  value += delta;
  RETURN_IF_ERROR(PutLocked(key, absl::StrCat(value)));
  return value;
}

bool StoreTable::AllSetLocked(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(),
                     [this](const std::string& k)
                         ABSL_SHARED_LOCKS_REQUIRED(mu_) { return values_.contains(k); });
}

absl::StatusOr<bool> StoreTable::Check(const std::vector<std::string>& keys) {
  RETURN_IF_ERROR(CheckKeys(keys));
  absl::MutexLock lock(&mu_);
  return AllSetLocked(keys);
}

namespace {

struct Pending {
  std::function<bool()> ready;
};

bool IsReady(Pending* p) { return p->ready(); }

}  // namespace

absl::Status StoreTable::AwaitKeys(const std::vector<std::string>& keys, absl::Time deadline,
                                   const CancelledFn& cancelled) {
  deadline = std::min(deadline, absl::Now() + limits_.max_wait);
  if (AllSetLocked(keys)) return absl::OkStatus();
  if (closed_) return absl::UnavailableError("rendezvous store: shutting down");
  if (waiters_ >= limits_.max_waiters) {
    return absl::ResourceExhaustedError(
        absl::StrCat("rendezvous store: already ", waiters_,
                     " calls wait for keys, the limit; waiting for ", NameKeys(keys), " refused"));
  }
  ++waiters_;
  // Called by the mutex with mu_ held (absl::Condition cannot carry the annotation).
  Pending pending{[this, &keys]()
                      ABSL_NO_THREAD_SAFETY_ANALYSIS { return closed_ || AllSetLocked(keys); }};
  absl::Status result = absl::OkStatus();
  while (true) {
    const absl::Time step = std::min(deadline, absl::Now() + kPollCancelled);
    if (mu_.AwaitWithDeadline(absl::Condition(&IsReady, &pending), step)) {
      if (!AllSetLocked(keys)) result = absl::UnavailableError("rendezvous store: shutting down");
      break;
    }
    if (absl::Now() >= deadline) {
      std::vector<std::string> missing;
      for (const std::string& k : keys) {
        if (!values_.contains(k)) missing.push_back(k);
      }
      result = absl::DeadlineExceededError(
          absl::StrCat("rendezvous store: ", missing.size() == 1 ? "key " : "keys ",
                       NameKeys(missing), " not set within the wait"));
      break;
    }
    if (cancelled && cancelled()) {
      result = absl::CancelledError("rendezvous store: the caller left");
      break;
    }
  }
  --waiters_;
  return result;
}

absl::StatusOr<std::string> StoreTable::Get(const std::string& key, absl::Time deadline,
                                            const CancelledFn& cancelled) {
  RETURN_IF_ERROR(CheckKey(key));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(AwaitKeys({key}, deadline, cancelled));
  return values_.at(key);
}

absl::Status StoreTable::Wait(const std::vector<std::string>& keys, absl::Time deadline,
                              const CancelledFn& cancelled) {
  RETURN_IF_ERROR(CheckKeys(keys));
  absl::MutexLock lock(&mu_);
  return AwaitKeys(keys, deadline, cancelled);
}

bool StoreTable::Delete(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(key);
  if (it == values_.end()) return false;
  total_bytes_ -= static_cast<int64_t>(key.size() + it->second.size());
  values_.erase(it);
  return true;
}

int64_t StoreTable::NumKeys() {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(values_.size());
}

void StoreTable::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

}  // namespace graphshard::client
