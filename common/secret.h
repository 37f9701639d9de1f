#ifndef GRAPHSHARD_COMMON_SECRET_H_
#define GRAPHSHARD_COMMON_SECRET_H_

// The job token (docs/SECURITY.md): read from a file only its owner can read, or from the
// environment variable GRAPHSHARD_TOKEN, never from the command line (where `ps` shows it to
// every user of the host). Compared in constant time wherever a peer presents it.
// Thread-safe: free functions; LoadJobToken reads the environment.

#include <string>
#include <vector>

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

// What a client presents instead of the token to the server it dials at `address` ("host:port"
// exactly as dialled; the host compared without case) in gRPC authorization metadata and the
// bulk hello: "gs2." and 64 hex digits of HMAC-SHA256 under the token of a domain label, the host
// and the port. The token itself never leaves the process: a registry entry that is not the
// job's server learns only a credential for its own address, which no server of the job accepts
// (a server accepts only the names of the address it bound: CredentialHosts), and cannot
// derive the token or another address's credential from it (docs/SECURITY.md).
std::string AddressCredential(absl::string_view token, absl::string_view address);

// The hosts (lowercase) whose AddressCredential a server bound to `bind_host` (the host part of
// its listen address) accepts at its port:
//   - a loopback host (127.x.x.x, "localhost", "[::1]", "::1"): every loopback name, since a
//     client of the same host may dial any of them and no other host can reach the port;
//   - a wildcard ("", "0.0.0.0", "[::]", "::"): this machine's hostname, its interfaces'
//     addresses (IPv6 bracketed) and the loopback names: which one a client dials cannot be
//     known (a loopback credential taken by a fake on another host is then accepted here too:
//     bind an address, as the launchers do);
//   - anything else: that host only, as bound and published.
std::vector<std::string> CredentialHosts(absl::string_view bind_host);

// The host part of "host:port" (everything before the last ':'; the whole string without one).
absl::string_view HostOfAddress(absl::string_view address);

// 16 hex digits (64 bits) of HMAC-SHA256 under `key` of a domain label and `stem`: the tag a
// server appends to the name of a shared-memory segment it makes for the client that gave it
// `key` (shm::TaggedSegmentName), so that the client maps or unlinks only segments named for it.
std::string SegmentTag(absl::string_view key, absl::string_view stem);

// The port of "host:port" / "[v6]:port" (the digits after the last ':'), or -1 if none.
int PortOfAddress(absl::string_view address);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_SECRET_H_
