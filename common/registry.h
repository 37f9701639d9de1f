#ifndef GRAPHSHARD_COMMON_REGISTRY_H_
#define GRAPHSHARD_COMMON_REGISTRY_H_

// The server registry (docs/DESIGN.md, "Finding servers"): a directory with one file per server,
// holding the address "host:port\n" that it actually bound. Replica 0 of part k (the only
// server of a part without replicas) writes `<dir>/part_<k>`, as registries always had; replica
// r >= 1 writes `<dir>/part_<k>.r<r>`. Files are written atomically (temp file, rename), so a
// reader sees a whole address or none, and a restarted server replaces its entry in one step.
// An entry outlives a server killed with SIGKILL: readers probe health before use
// (docs/DEPLOY.md, "Failure model").
//
// --servers lists are "a:1,b:2" (index = part); an entry may list the replicas of its part
// joined with '+': "a:1+c:1,b:2+d:2".

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphshard::common {

std::string RegistryFile(const std::string& dir, int part, int replica = 0);

// Creates `dir` if needed and publishes the address of `part` (replica `replica`). Internal on
// I/O errors.
absl::Status PublishAddress(const std::string& dir, int part, absl::string_view address,
                            int replica = 0);

// Removes one entry (at shutdown); missing entries are fine.
void RemoveAddress(const std::string& dir, int part, int replica = 0);

// The address in one registry file: NotFound naming it if it does not exist, DataLoss if it is
// malformed.
absl::StatusOr<std::string> ReadRegistryEntry(const std::string& path);

// Replica 0 of `part`. NotFound naming the file if it has not registered; DataLoss if the entry
// is malformed.
absl::StatusOr<std::string> LookupAddress(const std::string& dir, int part);

// Every registered replica of `part`, by replica index (replica 0 first when present).
// NotFound naming part_<part> when none has registered; DataLoss naming a malformed file.
absl::StatusOr<std::vector<std::string>> LookupReplicas(const std::string& dir, int part);

// The entries of `dir` (part_<k>, part_<k>.r<r>; temp files and others ignored), by part, then
// replica. NotFound naming `dir` when it cannot be read. Addresses are not read here.
struct RegistryEntry {
  int part = 0;
  int replica = 0;
};
absl::StatusOr<std::vector<RegistryEntry>> ListRegistry(const std::string& dir);
// With a job token, a registry is trusted only if no other user can have written its entries:
// OK if `dir` is a folder owned by this user that neither group nor others may write;
// PermissionDenied naming the folder, its owner and mode otherwise (docs/SECURITY.md).
// NotFound if it does not exist.
absl::Status CheckRegistryFolder(const std::string& dir);

// Splits "a:1,b:2" into entries (index = part); an entry may be "a:1+c:1" (replicas), each
// address checked. InvalidArgument naming the bad entry.
absl::StatusOr<std::vector<std::string>> ParseAddressList(absl::string_view list);

// The replicas of one --servers entry ("a:1+c:1" -> {"a:1", "c:1"}). InvalidArgument naming the
// bad address.
absl::StatusOr<std::vector<std::string>> SplitReplicas(absl::string_view entry);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_REGISTRY_H_
