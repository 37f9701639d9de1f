#include "server/malloc_tuning.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace graphshard::server {

namespace {
constexpr char kMarker[] = "GRAPHSHARD_MALLOC_TUNED";
}  // namespace

std::string MallocTunables(const char* current, int64_t mib) {
  const std::string now = current == nullptr ? "" : current;
  if (mib <= 0 || absl::StrContains(now, "glibc.malloc.mmap_threshold") ||
      absl::StrContains(now, "glibc.malloc.trim_threshold")) {
    return "";
  }
  const int64_t bytes = mib << 20;
  return absl::StrCat(now, now.empty() ? "" : ":", "glibc.malloc.mmap_threshold=", bytes,
                      ":glibc.malloc.trim_threshold=", 2 * bytes);
}

void ReexecWithMallocTunables(char** argv, int64_t mib) {
  if (std::getenv(kMarker) != nullptr) return;
  const std::string tunables = MallocTunables(std::getenv("GLIBC_TUNABLES"), mib);
  if (tunables.empty()) return;
  setenv(kMarker, "1", 1);
  setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  // The binary's own path, not /proc/self/exe: the process name (comm, what pgrep -x and top
  // show) is taken from the path executed.
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string path = "/proc/self/exe";
  if (n > 0) {
    self[n] = '\0';
    if (access(self, X_OK) == 0) path = self;
  }
  execv(path.c_str(), argv);
  const int err = errno;  // only on failure
  std::fprintf(stderr,
               "graphshard-server: warning: re-executing with GLIBC_TUNABLES=%s failed (%s); "
               "running with glibc's allocator defaults (--malloc-reuse-mib 0 skips this)\n",
               tunables.c_str(), std::strerror(err));
}

}  // namespace graphshard::server
