#include "common/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graphshard::common {
namespace {

// Writes all of `bytes` to `fd`; the errno of the failure, or 0.
int WriteAll(int fd, absl::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

// The folder of `path` ("." for a bare name).
std::string FolderOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat(tmp, ": cannot create: ", std::strerror(errno)));
  }
  if (const int err = WriteAll(fd, contents); err != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat(tmp, ": write failed: ", std::strerror(err)));
  }
  bool ok = ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat(path, ": atomic write failed: ", std::strerror(err)));
  }
  // The rename itself survives a crash once the folder is on disk too (best effort: a folder
  // that cannot be opened or synced leaves the new file in place all the same).
  const int dir = ::open(FolderOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::InternalError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<std::unique_ptr<AppendFile>> AppendFile::Open(const std::string& path,
                                                             bool truncate) {
  const int fd = ::open(path.c_str(),
                        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  return std::unique_ptr<AppendFile>(new AppendFile(path, fd));
}

AppendFile::~AppendFile() { ::close(fd_); }

absl::Status AppendFile::Append(absl::string_view record) {
  struct stat before;
  const bool sized = ::fstat(fd_, &before) == 0;
  const int err = WriteAll(fd_, record);
  if (err == 0) return absl::OkStatus();
  // Cut a partial record off; a file that is not a regular file (a pipe, /dev/full) has none.
  if (sized && S_ISREG(before.st_mode) && ::ftruncate(fd_, before.st_size) != 0) {
    return absl::InternalError(
        absl::StrCat(path_, ": write failed: ", std::strerror(err),
                     "; cutting the partial record off failed too: ", std::strerror(errno)));
  }
  return absl::InternalError(absl::StrCat(path_, ": write failed: ", std::strerror(err)));
}

}  // namespace graphshard::common
