#include "shm/host_proof.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace graphshard::shm {
namespace {

constexpr size_t kSecretBytes = 32;
constexpr size_t kSecretHex = 2 * kSecretBytes;

}  // namespace

absl::StatusOr<std::unique_ptr<HostProof>> HostProof::Create(const std::string& prefix) {
  std::random_device random;  // the kernel's getrandom on Linux
  std::string raw(kSecretBytes, '\0');
  for (char& c : raw) c = static_cast<char>(random() & 0xff);
  std::string secret = absl::BytesToHexString(raw);
  std::string name = absl::StrCat(prefix, "host-proof");
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot create the same-host proof /dev/shm", name,
                                            ": ", std::strerror(errno)));
  }
  // The mode is 0600 whatever the umask (shm_open applies it).
  const bool written = ::fchmod(fd, 0600) == 0 &&
                       ::write(fd, secret.data(), secret.size()) ==
                           static_cast<ssize_t>(secret.size());
  const int saved = errno;
  ::close(fd);
  if (!written) {
    ::shm_unlink(name.c_str());
    return absl::InternalError(absl::StrCat("cannot write the same-host proof /dev/shm", name,
                                            ": ", std::strerror(saved)));
  }
  return std::unique_ptr<HostProof>(new HostProof(std::move(name), std::move(secret)));
}

HostProof::~HostProof() { ::shm_unlink(name_.c_str()); }

bool HostProof::Verify(absl::string_view proof) const {
  if (proof.size() != secret_.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < secret_.size(); ++i) {
    diff |= static_cast<unsigned char>(proof[i] ^ secret_[i]);
  }
  return diff == 0;
}

absl::StatusOr<std::string> ReadHostProof(const std::string& name) {
  if (name.size() < 2 || name[0] != '/' || absl::StrContains(name.substr(1), "/")) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a same-host proof name"));
  }
  const int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    const int saved = errno;
    const std::string what =
        absl::StrCat("cannot read the same-host proof /dev/shm", name, ": ", std::strerror(saved));
    return saved == EACCES ? absl::PermissionDeniedError(what) : absl::NotFoundError(what);
  }
  std::string out(kSecretHex + 1, '\0');
  const ssize_t n = ::read(fd, out.data(), out.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(kSecretHex)) {
    return absl::NotFoundError(absl::StrCat("/dev/shm", name, " is not a same-host proof"));
  }
  out.resize(kSecretHex);
  return out;
}

}  // namespace graphshard::shm
