#ifndef GRAPHSHARD_COMMON_FILE_UTIL_H_
#define GRAPHSHARD_COMMON_FILE_UTIL_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace graphshard::common {

// Writes `contents` to `path` atomically: a temp file in the same folder, fsync, rename.
// Internal naming the path on failure; the old file (if any) is untouched then.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// NotFound / Internal naming the path.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_FILE_UTIL_H_
