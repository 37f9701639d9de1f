#include "shm/ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/rng.h"
#include "common/secret.h"
#include "common/status_macros.h"
#include "shm/internal/futex.h"

namespace graphshard::shm {
namespace {

// Sizes `fd` to `length` bytes with every page allocated: /dev/shm is a tmpfs, where a size
// alone reserves nothing, and a page that the full file system cannot give when it is first
// written is a SIGBUS, the server's end (Docker's /dev/shm is 64 MiB). Allocated here, a full
// /dev/shm is an error (ENOSPC) the caller can answer (the batch goes inline). 0 or the errno.
int SizeAndAllocate(int fd, size_t length) {
  if (::ftruncate(fd, static_cast<off_t>(length)) != 0) return errno;
  int err = EINTR;
  for (int tries = 0; err == EINTR && tries < 8; ++tries) {  // a signal (e.g. SIGTERM's drain)
    err = ::posix_fallocate(fd, 0, static_cast<off_t>(length));
  }
  // A file system without fallocate leaves the pages to the first write, as before.
  return err == EOPNOTSUPP || err == ENOSYS ? 0 : err;
}

// Creates `name` (exclusive) of `length` bytes, every page allocated; the descriptor,
// read-write. On failure nothing is left behind.
absl::StatusOr<int> CreateSized(const std::string& name, size_t length) {
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("shm ", name, ": create failed: ", std::strerror(errno)));
  }
  if (const int err = SizeAndAllocate(fd, length); err != 0) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    return absl::InternalError(absl::StrCat("shm ", name, ": resize to ", length, " failed: ",
                                            std::strerror(err)));
  }
  return fd;
}

// Opens an existing `name` with `flags` and unlinks the name; NotFound if it does not exist.
absl::StatusOr<int> OpenAndUnlinkName(const std::string& name, int flags) {
  int fd = ::shm_open(name.c_str(), flags | O_CLOEXEC, 0);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat("shm ", name, ": no such segment"));
    return absl::InternalError(absl::StrCat("shm ", name, ": open failed: ", std::strerror(err)));
  }
  ::shm_unlink(name.c_str());
  return fd;
}

// Capacity of a new or grown ring segment: room for batches a little larger than this one, in
// whole 2 MiB units.
size_t RingCapacity(size_t size) {
  constexpr size_t kUnit = size_t{2} << 20;
  const size_t wanted = size + size / 16 + 1;
  return (wanted + kUnit - 1) / kUnit * kUnit;
}

// Maps all of fd (control page + data) read-write.
absl::StatusOr<char*> MapRing(int fd, size_t length, const std::string& name) {
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    return absl::InternalError(absl::StrCat("shm ", name, ": mmap failed: ", std::strerror(errno)));
  }
  return static_cast<char*>(p);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::Create(const std::string& name,
                                                               size_t size) {
  const size_t mapped = size == 0 ? 1 : size;
  ASSIGN_OR_RETURN(int fd, CreateSized(name, mapped));
  // MAP_POPULATE: the pages are allocated in one call instead of one fault per 4 KiB page as
  // the batch is written (no measurable gain alone on the 2-core VM; streams that read the ring
  // avoid fresh pages altogether, tests/bench/RESULTS.md).
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return absl::InternalError(absl::StrCat("shm ", name, ": mmap failed: ", std::strerror(err)));
  }
  return std::unique_ptr<ShmSegment>(new ShmSegment(name, static_cast<char*>(p), size));
}

absl::StatusOr<std::shared_ptr<const ShmSegment>> ShmSegment::OpenAndUnlink(
    const std::string& name, size_t size) {
  ASSIGN_OR_RETURN(int fd, OpenAndUnlinkName(name, O_RDONLY));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < size) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat("shm ", name, ": smaller than the ", size,
                                            " bytes announced"));
  }
  const size_t mapped = size == 0 ? 1 : size;
  // MAP_POPULATE: the reader touches every page (tensors are built over them), so map them all
  // at once rather than fault them in one by one.
  void* p = ::mmap(nullptr, mapped, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    return absl::InternalError(absl::StrCat("shm ", name, ": mmap failed: ", std::strerror(err)));
  }
  return std::shared_ptr<const ShmSegment>(new ShmSegment(name, static_cast<char*>(p), size));
}

ShmSegment::~ShmSegment() {
  if (on_unmap_) on_unmap_();
  if (base_ != nullptr) ::munmap(base_, mapped_);
  if (fd_ >= 0) ::close(fd_);
}

uint32_t ShmSegment::Word() const {
  return std::atomic_ref<uint32_t>(*StateWord()).load(std::memory_order_acquire);
}

void ShmSegment::SetState(RingState state) const {
  std::atomic_ref<uint32_t> word(*StateWord());
  uint32_t old = word.load(std::memory_order_relaxed);
  // The count of changes above the state bits (wrapping) tells a waiter that the word moved.
  while (!word.compare_exchange_weak(old, ((old & ~3u) + 4u) | static_cast<uint32_t>(state),
                                     std::memory_order_acq_rel, std::memory_order_relaxed)) {
  }
  internal::FutexWake(StateWord());
}

namespace {
std::atomic<uint64_t> next_ring_serial{1};
}  // namespace

ShmRing::ShmRing(std::string name_prefix, std::atomic<int64_t>* counter, std::string key)
    : prefix_(std::move(name_prefix)), counter_(counter), key_(std::move(key)),
      serial_(next_ring_serial++) {}

ShmRing::~ShmRing() {
  // A segment never sent (its batch was built while the stream ended) has a name no reader
  // will unlink. Sent ones are the reader's to unlink (or UnlinkAll's, on failure).
  absl::MutexLock lock(&mu_);
  for (const Slot& slot : segments_) {
    if (!slot.sent) UnlinkShm(slot.segment->name());
  }
}

void ShmRing::UnlinkAll() {
  absl::MutexLock lock(&mu_);
  for (const Slot& slot : segments_) UnlinkShm(slot.segment->name());
}

int64_t ShmRing::segments() const {
  absl::MutexLock lock(&mu_);
  return std::ssize(segments_);
}

void ShmRing::MarkSent(const std::string& name) {
  absl::MutexLock lock(&mu_);
  ++sends_;
  for (Slot& slot : segments_) {
    if (slot.segment->name() == name) {
      slot.sent = true;
      slot.sent_order = sends_;
    }
  }
}

ShmRing::ReaderHold ShmRing::HeldByReader() const {
  absl::MutexLock lock(&mu_);
  ReaderHold hold;
  for (const Slot& slot : segments_) {
    if (!slot.sent) continue;
    const ShmSegment::RingState state = slot.segment->State();
    hold.held += state != ShmSegment::RingState::kReleased;
    hold.unopened += state == ShmSegment::RingState::kBusy;
  }
  return hold;
}

ShmRing::ReaderHold ShmRing::WaitForReader(const ReaderHold& seen, absl::Time deadline) const {
  std::vector<std::pair<uint64_t, internal::FutexWord>> held;  // by send order: oldest first
  {
    absl::MutexLock lock(&mu_);
    ReaderHold now;
    for (const Slot& slot : segments_) {
      if (!slot.sent) continue;
      const uint32_t word = slot.segment->Word();
      const auto state = static_cast<ShmSegment::RingState>(word & 3u);
      if (state == ShmSegment::RingState::kReleased) continue;
      ++now.held;
      now.unopened += state == ShmSegment::RingState::kBusy;
      held.push_back({slot.sent_order, {slot.segment->StateWord(), word}});
    }
    if (now != seen || held.empty()) return now;
  }
  // Outside the lock, so that the stream's builders keep acquiring segments. The words were
  // read above: a change since then (or a page gone with a segment grown meanwhile, which
  // needed a change first) returns at once.
  std::sort(held.begin(), held.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<internal::FutexWord> words;
  words.reserve(held.size());
  for (const auto& [order, word] : held) words.push_back(word);
  internal::FutexWaitAny(words, deadline);
  return HeldByReader();
}

absl::StatusOr<std::shared_ptr<ShmSegment>> ShmRing::Acquire(size_t size, bool* reused) {
  // Making or growing a segment (allocating and zeroing its pages: tens of ms for a 121 MB
  // batch) runs outside the lock, so that the stream's builders do it in parallel and the
  // writer's HeldByReader never waits for it.
  std::shared_ptr<ShmSegment> grow;
  {
    absl::MutexLock lock(&mu_);
    // A segment no one here holds, released by the reader or never sent (its batch was dropped):
    // the smallest that fits, else any (grown below).
    Slot* pick = nullptr;
    for (Slot& slot : segments_) {
      const ShmSegment& s = *slot.segment;
      if (slot.segment.use_count() != 1 || (slot.sent && !s.Released())) continue;
      const size_t have = pick == nullptr ? 0 : pick->segment->size();
      const bool better =
          pick == nullptr || (s.size() >= size && (have < size || s.size() < have));
      if (better) pick = &slot;
    }
    if (pick != nullptr) {
      // Busy from now on; while `grow` holds it (use_count > 1) no one else looks into it.
      pick->segment->SetState(ShmSegment::RingState::kBusy);
      pick->sent = false;
      if (reused != nullptr) *reused = true;
      if (pick->segment->size() >= size) return pick->segment;
      grow = pick->segment;
    }
  }
  if (grow != nullptr) {
    ShmSegment& s = *grow;
    const size_t capacity = RingCapacity(size);
    absl::Status grown = absl::OkStatus();
    if (const int err = SizeAndAllocate(s.fd_, kShmControlBytes + capacity); err != 0) {
      grown = absl::InternalError(absl::StrCat("shm ", s.name(), ": resize to ", capacity,
                                               " failed: ", std::strerror(err)));
    } else {
      ::munmap(s.base_, s.mapped_);
      s.base_ = nullptr;
      s.mapped_ = 0;
      absl::StatusOr<char*> base = MapRing(s.fd_, kShmControlBytes + capacity, s.name());
      if (base.ok()) {
        s.base_ = *base;
        s.mapped_ = kShmControlBytes + capacity;
        s.data_ = s.base_ + kShmControlBytes;
        s.size_ = capacity;
        s.SetState(ShmSegment::RingState::kBusy);
        return grow;
      }
      grown = base.status();
    }
    // Unusable now (a failed resize leaves it as it was, busy): drop it.
    absl::MutexLock lock(&mu_);
    UnlinkShm(s.name());
    std::erase_if(segments_, [&](const Slot& slot) { return slot.segment == grow; });
    return grown;
  }
  const std::string name = TaggedSegmentName(absl::StrCat(prefix_, (*counter_)++), key_);
  const size_t capacity = RingCapacity(size);
  ASSIGN_OR_RETURN(int fd, CreateSized(name, kShmControlBytes + capacity));
  absl::StatusOr<char*> base = MapRing(fd, kShmControlBytes + capacity, name);
  if (!base.ok()) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    return base.status();
  }
  auto segment =
      std::shared_ptr<ShmSegment>(new ShmSegment(name, *base, kShmControlBytes + capacity));
  segment->data_ = *base + kShmControlBytes;
  segment->size_ = capacity;
  segment->fd_ = fd;
  segment->SetState(ShmSegment::RingState::kBusy);
  absl::MutexLock lock(&mu_);
  segments_.push_back({segment, false});
  if (reused != nullptr) *reused = false;
  return segment;
}

ShmRingReader::~ShmRingReader() {
  absl::MutexLock lock(&mu_);
  for (auto& [name, entry] : entries_) ::close(entry.fd);
}

void ShmRingReader::Attach(uint64_t serial) {
  absl::MutexLock lock(&mu_);
  ++attached_[serial];
  for (auto it = entries_.begin(); it != entries_.end();) {
    const uint64_t s = it->second.serial;
    if (s != serial && !attached_.contains(s)) {
      ::close(it->second.fd);  // the mapping goes with the last lease
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

void ShmRingReader::SetMapHooks(MapHooks hooks) {
  absl::MutexLock lock(&mu_);
  hooks_ = std::move(hooks);
}

void ShmRingReader::Detach(uint64_t serial) {
  absl::MutexLock lock(&mu_);
  auto it = attached_.find(serial);
  if (it != attached_.end() && --it->second <= 0) attached_.erase(it);
}

int64_t ShmRingReader::mapped() const {
  absl::MutexLock lock(&mu_);
  return std::ssize(entries_);
}

absl::StatusOr<std::shared_ptr<const ShmSegment>> ShmRingReader::Open(const std::string& name,
                                                                      size_t size,
                                                                      uint64_t serial) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    ASSIGN_OR_RETURN(int fd, OpenAndUnlinkName(name, O_RDWR));
    it = entries_.emplace(name, Entry{fd, serial, nullptr}).first;
  }
  Entry& entry = it->second;
  if (entry.segment == nullptr || entry.segment->size() < size) {
    // First use, or the writer grew it: map it (again). Leases of the old mapping keep it.
    struct stat st {};
    if (::fstat(entry.fd, &st) != 0 ||
        static_cast<size_t>(st.st_size) < kShmControlBytes + size) {
      return absl::DataLossError(absl::StrCat("shm ", name, ": smaller than the ", size,
                                              " bytes announced"));
    }
    const size_t length = static_cast<size_t>(st.st_size);
    ASSIGN_OR_RETURN(char* base, MapRing(entry.fd, length, name));
    entry.segment = std::shared_ptr<ShmSegment>(new ShmSegment(name, base, length));
    entry.segment->data_ = base + kShmControlBytes;
    entry.segment->size_ = length - kShmControlBytes;
    if (hooks_.on_map && hooks_.on_map(base, length) && hooks_.on_unmap) {
      entry.segment->on_unmap_ = [unmap = hooks_.on_unmap, base] { unmap(base); };
    }
  }
  // The lease: releases the segment to the writer when the batch's last reference is gone.
  struct Lease {
    std::shared_ptr<ShmSegment> segment;
    ~Lease() {
      if (segment != nullptr) segment->SetState(ShmSegment::RingState::kReleased);
    }
  };
  auto lease = std::make_shared<Lease>();  // built in place: no temporary may release it
  lease->segment = entry.segment;
  lease->segment->SetState(ShmSegment::RingState::kOpened);
  return std::shared_ptr<const ShmSegment>(lease, lease->segment.get());
}

void UnlinkShm(const std::string& name) { ::shm_unlink(name.c_str()); }

std::string NewShmPrefix() {
  // The nonce separates several servers of one process (tests run them in-process).
  static_assert(sizeof(void*) <= sizeof(uint64_t));
  int local = 0;
  uint64_t nonce = common::Mix64(reinterpret_cast<uintptr_t>(&local) ^
                         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  return absl::StrCat("/graphshard-", ::getpid(), "-", absl::Hex(nonce & 0xffffffffu), "-");
}

std::string TaggedSegmentName(absl::string_view stem, absl::string_view key) {
  return absl::StrCat(stem, "_", common::SegmentTag(key, stem));
}

absl::Status CheckSegmentName(absl::string_view name, absl::string_view prefix,
                              absl::string_view key) {
  // "/graphshard-<pid>-<hex nonce>-"
  auto prefix_ok = [](absl::string_view p) {
    if (!absl::ConsumePrefix(&p, "/graphshard-") || !absl::ConsumeSuffix(&p, "-")) return false;
    const size_t dash = p.find('-');
    if (dash == absl::string_view::npos || dash == 0 || dash + 1 == p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i) {
      const char c = p[i];
      if (i == dash) continue;
      const bool digit = c >= '0' && c <= '9';
      const bool hex = digit || (c >= 'a' && c <= 'f');
      if (i < dash ? !digit : !hex) return false;
    }
    return true;
  };
  if (!prefix_ok(prefix)) {
    return absl::DataLossError(absl::StrCat("shared-memory segment '", name,
                                            "' is not one of this server's (its prefix '", prefix,
                                            "' is not one a graphshard server makes): not opened"));
  }
  // prefix, a number, '_', the tag: the only form TaggedSegmentName makes.
  absl::string_view rest = name;
  const size_t underscore = name.rfind('_');
  bool ok = absl::ConsumePrefix(&rest, prefix) && underscore != absl::string_view::npos &&
            underscore > prefix.size() && !key.empty();
  const absl::string_view number =
      ok ? name.substr(prefix.size(), underscore - prefix.size()) : absl::string_view();
  ok = ok && number.size() <= 19 &&
       number.find_first_not_of("0123456789") == absl::string_view::npos &&
       name == TaggedSegmentName(name.substr(0, underscore), key);
  if (!ok) {
    return absl::DataLossError(absl::StrCat(
        "shared-memory segment '", name, "' is not one this server (prefix ", prefix,
        ") made for this client (a segment carries the tag of the client's key): not opened"));
  }
  return absl::OkStatus();
}

void RemoveOwnAndStaleShm(const std::string& own_prefix) {
  std::error_code ec;
  const std::string own = own_prefix.substr(1);
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, "graphshard-")) continue;
    bool remove = absl::StartsWith(name, own);
    if (!remove) {
      absl::string_view rest = absl::string_view(name).substr(11);
      int pid = 0;
      if (absl::SimpleAtoi(rest.substr(0, rest.find('-')), &pid) && pid > 0) {
        remove = ::kill(pid, 0) != 0 && errno == ESRCH;
      }
    }
    if (remove) ::shm_unlink(("/" + name).c_str());
  }
}

std::string HostId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(in, boot);
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  // The network namespace: processes in two namespaces of one machine (containers, the netns
  // test's emulated hosts) count as two hosts, as they reach each other through the network.
  std::error_code ec;
  const std::string net = std::filesystem::read_symlink("/proc/self/ns/net", ec).string();
  return absl::StrCat(absl::StripAsciiWhitespace(boot), "/", host, ec ? "" : "/", net);
}

}  // namespace graphshard::shm
