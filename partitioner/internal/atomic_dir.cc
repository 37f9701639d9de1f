#include "partitioner/internal/atomic_dir.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace graphshard::partitioner::internal {

namespace fs = std::filesystem;

absl::StatusOr<AtomicDir> AtomicDir::Create(const std::string& final_path, bool replace) {
  std::error_code ec;
  if (final_path.empty()) return absl::InvalidArgumentError("output path is empty");
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
