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

// What a client presents instead of the token to the server listening on `port` (gRPC
// authorization metadata, bulk hello): "gs1." and 64 hex digits of HMAC-SHA256 under the token of
// a domain label and the port. The token itself never leaves the process: a registry entry
// that is not the job's server learns only a credential for its own port, where no server of
// the job listens (one process per port on a host), and cannot derive the token or another
// port's credential from it (docs/SECURITY.md).
std::string PortCredential(absl::string_view token, int port);

// 16 hex digits (64 bits) of HMAC-SHA256 under `key` of a domain label and `stem`: the tag a
// server appends to the name of a shared-memory segment it makes for the client that gave it
// `key` (shm::TaggedSegmentName), so that the client maps or unlinks only segments named for it.
std::string SegmentTag(absl::string_view key, absl::string_view stem);

// The port of "host:port" / "[v6]:port" (the digits after the last ':'), or -1 if none.
int PortOfAddress(absl::string_view address);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_SECRET_H_
