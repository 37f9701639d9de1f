#include "common/fd_passing.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphshard::common {
namespace {

using Clock = std::chrono::steady_clock;

std::string Errno(const char* what) { return absl::StrCat(what, ": ", std::strerror(errno)); }

// The abstract-namespace address of `name` (a leading NUL, then the name, no terminator).
socklen_t Address(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(addr->sun_path) - 1);
  std::memcpy(addr->sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

// Milliseconds left until `deadline` (0 once past).
int MsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Waits until `fd` is readable; false at the deadline.
bool Readable(int fd, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, MsLeft(deadline));
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

absl::StatusOr<std::string> RandomName() {
  unsigned char bytes[20];
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(Errno("open /dev/urandom"));
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t r = ::read(fd, bytes + got, sizeof(bytes) - got);
    if (r <= 0 && errno != EINTR) break;
    if (r > 0) got += static_cast<size_t>(r);
  }
  ::close(fd);
  if (got < sizeof(bytes)) return absl::InternalError("cannot read /dev/urandom");
  std::string name = "graphshard-fd-";
  static const char kHex[] = "0123456789abcdef";
  for (unsigned char b : bytes) {
    name += kHex[b >> 4];
    name += kHex[b & 15];
  }
  return name;
}

// One byte of data with room for one descriptor beside it: what both sides exchange.
struct OneByteMessage {
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  OneByteMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
  }
  OneByteMessage(const OneByteMessage&) = delete;
  OneByteMessage& operator=(const OneByteMessage&) = delete;
};

bool SendFd(int conn, int fd) {
  OneByteMessage m;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  return ::sendmsg(conn, &m.msg, MSG_NOSIGNAL) == 1;
}

}  // namespace

absl::StatusOr<FdOffer> FdOffer::Listen() {
  absl::StatusOr<std::string> name = RandomName();
  if (!name.ok()) return name.status();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(Errno("socket(AF_UNIX)"));
  sockaddr_un addr;
  const socklen_t len = Address(*name, &addr);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0) {
    const std::string why = Errno(absl::StrCat("listening on @", *name).c_str());
    ::close(fd);
    return absl::InternalError(why);
  }
  return FdOffer(fd, *std::move(name));
}

FdOffer::FdOffer(FdOffer&& other) noexcept
    : listen_fd_(std::exchange(other.listen_fd_, -1)), name_(std::move(other.name_)) {}

FdOffer& FdOffer::operator=(FdOffer&& other) noexcept {
  if (this != &other) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = std::exchange(other.listen_fd_, -1);
    name_ = std::move(other.name_);
  }
  return *this;
}

FdOffer::~FdOffer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

absl::Status FdOffer::Serve(int fd, std::vector<pid_t> allowed, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(
                                           static_cast<int64_t>(std::max(0.0, timeout_s) * 1e3));
  while (!allowed.empty()) {
    if (!Readable(listen_fd_, deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat("@", name_, ": processes ", absl::StrJoin(allowed, ", "),
                       " did not come for the shared descriptor within ", timeout_s, " s"));
    }
    const int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;  // gone before it was accepted, or interrupted
    ucred cred{};
    socklen_t len = sizeof(cred);
    const bool known =
        ::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == ::getuid();
    const auto it = known ? std::find(allowed.begin(), allowed.end(), cred.pid) : allowed.end();
    if (it != allowed.end() && SendFd(conn, fd)) allowed.erase(it);
    ::close(conn);  // anyone else: closed unanswered
  }
  return absl::OkStatus();
}

absl::StatusOr<int> FetchFd(const std::string& name, pid_t from, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(
                                           static_cast<int64_t>(std::max(0.0, timeout_s) * 1e3));
  const int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return absl::InternalError(Errno("socket(AF_UNIX)"));
  sockaddr_un addr;
  const socklen_t len = Address(name, &addr);
  if (::connect(sock, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const std::string why = Errno(absl::StrCat("connecting to @", name).c_str());
    ::close(sock);
    return absl::UnavailableError(why);
  }
  ucred cred{};
  socklen_t cred_len = sizeof(cred);
  if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 ||
      cred.uid != ::getuid() || cred.pid != from) {
    ::close(sock);
    return absl::PermissionDeniedError(absl::StrCat("@", name, " is served by process ", cred.pid,
                                                    " (user ", cred.uid, "), not process ", from,
                                                    " of this user: not believed"));
  }
  if (!Readable(sock, deadline)) {
    ::close(sock);
    return absl::DeadlineExceededError(
        absl::StrCat("@", name, " sent no descriptor within ", timeout_s, " s"));
  }
  OneByteMessage m;
  const ssize_t r = ::recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC);
  ::close(sock);
  const cmsghdr* c =
      r == 1 && (m.msg.msg_flags & MSG_CTRUNC) == 0 ? CMSG_FIRSTHDR(&m.msg) : nullptr;
  if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int))) {
    return absl::PermissionDeniedError(absl::StrCat(
        "@", name, " closed the connection without a descriptor (not offered to this process)"));
  }
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

}  // namespace graphshard::common
