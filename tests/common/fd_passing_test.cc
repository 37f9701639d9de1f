#include "common/fd_passing.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace graphshard::common {
namespace {

// A pipe whose read end is offered: what comes through the fetched descriptor is what was
// written into the pipe.
struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { EXPECT_EQ(::pipe(fds), 0); }
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
};

std::string ReadAll(int fd) {
  std::string out;
  char buf[64];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(FdPassing, AnAllowedProcessGetsTheSameFile) {
  absl::StatusOr<FdOffer> offer = FdOffer::Listen();
  ASSERT_TRUE(offer.ok()) << offer.status();
  EXPECT_EQ(offer->name().rfind("graphshard-fd-", 0), 0u);
  Pipe pipe;
  absl::Status served;
  std::thread server([&] { served = offer->Serve(pipe.fds[0], {::getpid()}, 10); });
  absl::StatusOr<int> fd = FetchFd(offer->name(), ::getpid(), 10);
  server.join();
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_TRUE(served.ok()) << served;
  ASSERT_EQ(::write(pipe.fds[1], "rows", 4), 4);
  ::close(pipe.fds[1]);
  pipe.fds[1] = -1;
  EXPECT_EQ(ReadAll(*fd), "rows");  // the received descriptor reads the offered pipe
  ::close(*fd);
}

TEST(FdPassing, AProcessNotAllowedGetsNothingAndTheOfferWaitsForTheRightOne) {
  absl::StatusOr<FdOffer> offer = FdOffer::Listen();
  ASSERT_TRUE(offer.ok()) << offer.status();
  Pipe pipe;
  // Allowed: only a child process; this process connects first and is turned away.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t owner = ::getpid();
  const pid_t child = ::fork();
  if (child == 0) {
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(3);
    absl::StatusOr<int> fd = FetchFd(offer->name(), owner, 10);
    ::_exit(fd.ok() ? 0 : 2);
  }
  absl::Status served;
  std::thread server([&] { served = offer->Serve(pipe.fds[0], {child}, 10); });
  absl::StatusOr<int> mine = FetchFd(offer->name(), ::getpid(), 10);
  EXPECT_EQ(mine.status().code(), absl::StatusCode::kPermissionDenied) << mine.status();
  EXPECT_NE(mine.status().message().find(offer->name()), std::string::npos);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  server.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(served.ok()) << served;
  ::close(go[0]);
  ::close(go[1]);
}

TEST(FdPassing, TheOfferEndsAtItsDeadlineNamingWhoDidNotCome) {
  absl::StatusOr<FdOffer> offer = FdOffer::Listen();
  ASSERT_TRUE(offer.ok()) << offer.status();
  Pipe pipe;
  const auto start = std::chrono::steady_clock::now();
  const absl::Status served = offer->Serve(pipe.fds[0], {4242424}, 0.3);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(served.code(), absl::StatusCode::kDeadlineExceeded) << served;
  EXPECT_NE(served.message().find("4242424"), std::string::npos) << served;
  EXPECT_LT(took, 5.0);
}

TEST(FdPassing, AnOfferFromAnotherProcessThanTheOwnerIsNotBelieved) {
  // The name served by this process, the fetch expecting another (as after the owner's offer
  // closed and someone else took its name): refused before anything is received.
  absl::StatusOr<FdOffer> offer = FdOffer::Listen();
  ASSERT_TRUE(offer.ok()) << offer.status();
  absl::StatusOr<int> fd = FetchFd(offer->name(), ::getpid() + 1, 10);
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kPermissionDenied) << fd.status();
  EXPECT_NE(fd.status().message().find("not believed"), std::string::npos) << fd.status();
}

TEST(FdPassing, FetchingWhereNothingListensFailsNamingTheSocket) {
  absl::StatusOr<int> fd = FetchFd("graphshard-fd-nobody-listens-here", ::getpid(), 1);
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kUnavailable) << fd.status();
  EXPECT_NE(fd.status().message().find("graphshard-fd-nobody-listens-here"), std::string::npos);
}

TEST(FdPassing, FetchingFromASilentOfferEndsAtTheDeadline) {
  absl::StatusOr<FdOffer> offer = FdOffer::Listen();  // listens, never serves
  ASSERT_TRUE(offer.ok()) << offer.status();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<int> fd = FetchFd(offer->name(), ::getpid(), 0.3);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kDeadlineExceeded) << fd.status();
  EXPECT_LT(took, 5.0);
}

}  // namespace
}  // namespace graphshard::common
