#ifndef GRAPHSHARD_COMMON_FILE_UTIL_H_
#define GRAPHSHARD_COMMON_FILE_UTIL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphshard::common {

// Writes `contents` to `path` atomically: a temp file in the same folder, fsync, rename.
// Internal naming the path on failure; the old file (if any) is untouched then.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// NotFound / Internal naming the path.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// A file that grows by whole records (a JSONL metrics file, a TensorBoard event file): each
// Append is written through to the file or not at all. A write that fails part way (the disk is
// full) is cut back to the record before it, so that readers never find half a record.
// Not thread-safe.
class AppendFile {
 public:
  // Opens (creating it, mode 0644) `path` for appending; `truncate` empties it first. Internal
  // naming the path and the reason when it cannot.
  static absl::StatusOr<std::unique_ptr<AppendFile>> Open(const std::string& path, bool truncate);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  // Writes `record` at the end. Internal naming the path and the reason ("No space left on
  // device") on failure; the file then ends where it ended before the call.
  absl::Status Append(absl::string_view record);
  const std::string& path() const { return path_; }

 private:
  AppendFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_FILE_UTIL_H_
