#include "partitioner/internal/atomic_dir.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace graphshard::partitioner::internal {

namespace fs = std::filesystem;

int AtomicDir::RemoveStaleTemporaries(const std::string& final_path) {
  const fs::path final_fs(final_path);
  fs::path parent = final_fs.parent_path();
  if (parent.empty()) parent = ".";
  const std::string prefix = absl::StrCat(final_fs.filename().string(), ".tmp-");
  std::error_code ec;
  int removed = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    int pid = 0;
    if (name.rfind(prefix, 0) != 0 || !absl::SimpleAtoi(name.substr(prefix.size()), &pid) ||
        pid <= 0 || pid == ::getpid()) {
      continue;
    }
    if (::kill(pid, 0) == 0 || errno == EPERM) {
      std::fprintf(stderr,
                   "graphshard-partition: %s is being written by process %d (another run "
                   "with the same --out?); leaving it\n",
                   e.path().c_str(), pid);
      continue;
    }
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    if (rm) {
      std::fprintf(stderr, "graphshard-partition: cannot remove %s, left by a killed run: %s\n",
                   e.path().c_str(), rm.message().c_str());
      continue;
    }
    std::fprintf(stderr, "graphshard-partition: removed %s, left by a killed run (process %d)\n",
                 e.path().c_str(), pid);
    ++removed;
  }
  return removed;
}

absl::StatusOr<AtomicDir> AtomicDir::Create(const std::string& final_path, bool replace) {
  std::error_code ec;
  if (final_path.empty()) return absl::InvalidArgumentError("output path is empty");
  RemoveStaleTemporaries(final_path);
  if (fs::exists(final_path, ec) && !replace) {
    return absl::InvalidArgumentError(
        absl::StrCat(final_path, ": already exists (pass --force to replace it)"));
  }
  std::string tmp = absl::StrCat(final_path, ".tmp-", ::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat(tmp, ": cannot create folder: ", ec.message()));
  }
  return AtomicDir(final_path, tmp, replace);
}

AtomicDir::AtomicDir(AtomicDir&& other) noexcept
    : final_path_(std::move(other.final_path_)),
      tmp_path_(std::move(other.tmp_path_)),
      replace_(other.replace_),
      done_(other.done_) {
  other.done_ = true;
}

AtomicDir::~AtomicDir() {
  if (done_) return;
  std::error_code ec;
  fs::remove_all(tmp_path_, ec);
}

absl::Status AtomicDir::MakeDirs(const std::string& relative) const {
  std::error_code ec;
  std::string path = absl::StrCat(tmp_path_, "/", relative);
  fs::create_directories(path, ec);
  if (ec) return absl::InternalError(absl::StrCat(path, ": cannot create folder: ", ec.message()));
  return absl::OkStatus();
}

absl::Status AtomicDir::Commit() {
  std::error_code ec;
  std::string old;
  if (fs::exists(final_path_, ec)) {
    if (!replace_) {
      return absl::InvalidArgumentError(absl::StrCat(final_path_, ": appeared while writing"));
    }
    // Move the old folder aside first: rename() cannot replace a non-empty folder.
    old = absl::StrCat(final_path_, ".old-", ::getpid());
    fs::remove_all(old, ec);
    fs::rename(final_path_, old, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat(final_path_, ": cannot move aside: ", ec.message()));
    }
  }
  fs::rename(tmp_path_, final_path_, ec);
  if (ec) {
    std::error_code ignored;
    if (!old.empty()) fs::rename(old, final_path_, ignored);
    return absl::InternalError(
        absl::StrCat(tmp_path_, ": cannot rename to ", final_path_, ": ", ec.message()));
  }
  done_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
  return absl::OkStatus();
}

}  // namespace graphshard::partitioner::internal
