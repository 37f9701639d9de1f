#include "partitioner/internal/positional_npy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace graphshard::partitioner::internal {
namespace {

absl::Status IoError(const std::string& path, const char* what) {
  return absl::InternalError(absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<PositionalNpy> PositionalNpy::Create(const std::string& path, common::DType dtype,
                                                    std::vector<int64_t> shape) {
  if (!common::ShapeFits(shape, common::DTypeSize(dtype))) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": shape too large"));
  }
  int64_t elements = 1;
  for (int64_t d : shape) elements *= d;
  const std::string header = common::EncodeNpyHeader(dtype, shape);
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path, "open");
  PositionalNpy file(path, fd, static_cast<int64_t>(header.size()),
                     elements * static_cast<int64_t>(common::DTypeSize(dtype)));
  if (::ftruncate(fd, file.data_offset_ + file.data_bytes_) != 0) {
    return IoError(path, "ftruncate");
  }
  // The header goes through the same checked path as the data.
  absl::Status s = file.WriteBytes(-file.data_offset_, header.data(), file.data_offset_);
  if (!s.ok()) return s;
  return file;
}

PositionalNpy::PositionalNpy(PositionalNpy&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      data_offset_(other.data_offset_),
      data_bytes_(other.data_bytes_) {
  other.fd_ = -1;
}

PositionalNpy::~PositionalNpy() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status PositionalNpy::WriteBytes(int64_t at, const char* data, int64_t n) const {
  if (at < -data_offset_ || n < 0 || at + n > data_bytes_) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": write of ", n, " bytes at ", at, " past the end (", data_bytes_,
                     " bytes of data)"));
  }
  int64_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd_, data + done, static_cast<size_t>(n - done),
                               static_cast<off_t>(data_offset_ + at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return IoError(path_, "write");
    done += w;
  }
  return absl::OkStatus();
}

absl::Status PositionalNpy::Close() {
  if (fd_ < 0) return absl::OkStatus();
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return IoError(path_, "fsync");
  }
  if (::close(fd) != 0) return IoError(path_, "close");
  return absl::OkStatus();
}

}  // namespace graphshard::partitioner::internal
