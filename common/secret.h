#ifndef GRAPHSHARD_COMMON_SECRET_H_
#define GRAPHSHARD_COMMON_SECRET_H_

// The job token (docs/SECURITY.md): read from a file only its owner can read, or from the
// environment variable GRAPHSHARD_TOKEN, never from the command line (where `ps` shows it to
// every user of the host). Compared in constant time wherever a peer presents it.
// Thread-safe: free functions; LoadJobToken reads the environment.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphshard::common {

inline constexpr char kTokenEnvVar[] = "GRAPHSHARD_TOKEN";
// Shortest token accepted: the launcher writes 64 hex digits (256 bits).
inline constexpr int kMinTokenChars = 16;

// true iff a == b, in time that depends only on the lengths (not on where they differ).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// The contents of `path`, which must be a regular file that no one but its owner may read or
// write (mode 0600 or 0400) and that the caller owns; otherwise PermissionDenied naming the file
// and its mode. NotFound / InvalidArgument for a missing or unreadable file.
absl::StatusOr<std::string> ReadPrivateFile(const std::string& path);

// The job token: from `token_file` if not empty (ReadPrivateFile, trailing newline removed),
// else from GRAPHSHARD_TOKEN, else "" (no token: the job runs unauthenticated). A token shorter
// than kMinTokenChars or holding anything but printable ASCII without spaces is InvalidArgument
// naming its source (not its value).
absl::StatusOr<std::string> LoadJobToken(const std::string& token_file);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_SECRET_H_
