#ifndef GRAPHSHARD_COMMON_REGISTRY_H_
#define GRAPHSHARD_COMMON_REGISTRY_H_

// The server registry (DESIGN.md, "Finding servers"): a directory with one file per part,
// `<dir>/part_<k>`, holding the address "host:port\n" that server k actually bound. Files are
// written atomically, so a reader sees a whole address or none.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphshard::common {

std::string RegistryFile(const std::string& dir, int part);

// Creates `dir` if needed and publishes the address of `part`. Internal on I/O errors.
absl::Status PublishAddress(const std::string& dir, int part, absl::string_view address);

// Removes the entry of `part` (at shutdown); missing entries are fine.
void RemoveAddress(const std::string& dir, int part);

// NotFound naming the file if `part` has not registered; DataLoss if the entry is malformed.
absl::StatusOr<std::string> LookupAddress(const std::string& dir, int part);

// Splits "a:1,b:2" into addresses (index = part). InvalidArgument naming the bad entry.
absl::StatusOr<std::vector<std::string>> ParseAddressList(absl::string_view list);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_REGISTRY_H_
