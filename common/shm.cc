#include "common/shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"

namespace graphshard::common {

absl::StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::Create(const std::string& name,
                                                               size_t size) {
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("shm ", name, ": create failed: ", std::strerror(errno)));
  }
  const size_t mapped = size == 0 ? 1 : size;
  if (::ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
    int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return absl::InternalError(absl::StrCat("shm ", name, ": resize to ", size, " failed: ",
                                            std::strerror(err)));
  }
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
  int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat("shm ", name, ": no such segment"));
    return absl::InternalError(absl::StrCat("shm ", name, ": open failed: ", std::strerror(err)));
  }
  ::shm_unlink(name.c_str());
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < size) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat("shm ", name, ": smaller than the ", size,
                                            " bytes announced"));
  }
  const size_t mapped = size == 0 ? 1 : size;
  void* p = ::mmap(nullptr, mapped, PROT_READ, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    return absl::InternalError(absl::StrCat("shm ", name, ": mmap failed: ", std::strerror(err)));
  }
  return std::shared_ptr<const ShmSegment>(new ShmSegment(name, static_cast<char*>(p), size));
}

ShmSegment::~ShmSegment() { ::munmap(data_, size_ == 0 ? 1 : size_); }

void UnlinkShm(const std::string& name) { ::shm_unlink(name.c_str()); }

std::string NewShmPrefix() {
  // The nonce separates several servers of one process (tests run them in-process).
  static_assert(sizeof(void*) <= sizeof(uint64_t));
  int local = 0;
  uint64_t nonce = Mix64(reinterpret_cast<uintptr_t>(&local) ^
                         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  return absl::StrCat("/graphshard-", ::getpid(), "-", absl::Hex(nonce & 0xffffffffu), "-");
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
  return absl::StrCat(absl::StripAsciiWhitespace(boot), "/", host);
}

}  // namespace graphshard::common
