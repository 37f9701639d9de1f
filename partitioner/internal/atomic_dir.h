#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_ATOMIC_DIR_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_ATOMIC_DIR_H_

// A folder written under a temporary name (`<final>.tmp-<pid>`) and renamed into place by
// Commit(); destroyed without Commit(), it removes the temporary folder. Not thread-safe.
// A run killed before either (SIGKILL, a crash, the machine going down) leaves its temporary
// folder behind: Create removes those of `final` whose process is gone, and names on stderr
// those whose process still runs (another run writing the same output).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphshard::partitioner::internal {

class AtomicDir {
 public:
  // InvalidArgument if `final_path` exists and !replace; Internal if the temporary folder
  // cannot be created.
  static absl::StatusOr<AtomicDir> Create(const std::string& final_path, bool replace);
  // The stale `<final>.tmp-<pid>` folders beside `final_path` (see above); returns how many
  // were removed. Create calls it.
  static int RemoveStaleTemporaries(const std::string& final_path);
  AtomicDir(AtomicDir&& other) noexcept;
  AtomicDir& operator=(AtomicDir&&) = delete;
  ~AtomicDir();

  const std::string& tmp_path() const { return tmp_path_; }
  // Creates `tmp_path()/relative` and its parents.
  absl::Status MakeDirs(const std::string& relative) const;
  // Renames the temporary folder to the final path (replacing an old one if allowed).
  absl::Status Commit();

 private:
  AtomicDir(std::string final_path, std::string tmp_path, bool replace)
      : final_path_(std::move(final_path)), tmp_path_(std::move(tmp_path)), replace_(replace) {}
  std::string final_path_;
  std::string tmp_path_;
  bool replace_ = false;
  bool done_ = false;
};

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_ATOMIC_DIR_H_
