#ifndef GRAPHSHARD_COMMON_FD_PASSING_H_
#define GRAPHSHARD_COMMON_FD_PASSING_H_

// A file descriptor handed to named processes of this host over a Unix socket (SCM_RIGHTS):
// what the shared device tier needs where its GPU memory is shared as a file descriptor (CUDA's
// virtual memory API; trainer/host_register.h). The socket lives in the abstract namespace
// (nothing on disk) under a random name, which travels to the peers through the job's own
// channel; since any local process can see that name (/proc/net/unix), the offer hands its
// descriptor only to connections whose peer credentials (SO_PEERCRED) show this user and one
// of the process ids it was told, each once, and closes every other connection unanswered;
// the fetching side in turn believes only the process that published the name (a name taken
// over after the offer closed gets nothing). Both sides are bounded by a deadline.

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphshard::common {

class FdOffer {
 public:
  // A listening socket under a fresh random name: peers may connect from now on (their
  // connections wait in its backlog until Serve).
  static absl::StatusOr<FdOffer> Listen();
  FdOffer() = default;  // listens nowhere (what a moved-from or closed offer is)
  FdOffer(FdOffer&& other) noexcept;
  FdOffer& operator=(FdOffer&& other) noexcept;
  FdOffer(const FdOffer&) = delete;
  FdOffer& operator=(const FdOffer&) = delete;
  ~FdOffer();

  // The name FetchFd connects to.
  const std::string& name() const { return name_; }

  // Hands `fd` to one connection from each process of `allowed` (this user's), closing any
  // other connection; returns once each has had it, DeadlineExceeded (naming the ones left)
  // when `timeout_s` passes first. Does not close `fd`.
  absl::Status Serve(int fd, std::vector<pid_t> allowed, double timeout_s);

 private:
  FdOffer(int listen_fd, std::string name) : listen_fd_(listen_fd), name_(std::move(name)) {}
  int listen_fd_ = -1;
  std::string name_;
};

// The descriptor that process `from` (this user's) offers under `name` (a new descriptor the
// caller owns and closes); an error naming the socket when nothing listens there, another
// process does (PermissionDenied: a name taken over after the offer closed is not believed),
// the offer closes the connection without one (this process is not one it serves), or
// `timeout_s` passes.
absl::StatusOr<int> FetchFd(const std::string& name, pid_t from, double timeout_s);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_FD_PASSING_H_
