#ifndef GRAPHSHARD_COMMON_SERVER_LIST_H_
#define GRAPHSHARD_COMMON_SERVER_LIST_H_

// Where a tool finds the partition servers (graphshard-health, graphshard-stats): an explicit
// --servers list, or a --registry folder (common/registry.h) read anew at every call, so that
// servers that register late, restart on new ports or add replicas are seen. Thread-safe: no
// state; reads the registry folder.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphshard::common {

struct ServerListOptions {
  std::string servers;   // --servers "a:1+c:1,b:2": index = part, '+' joins the part's replicas
  std::string registry;  // --registry DIR
  // With a registry only. parts > 0: entries of parts >= parts are left out, and a server of a
  // part below it without an entry is listed as missing (see replicas). 0: the entries as found.
  int parts = 0;
  // With a registry only. replicas > 0: entries of replicas >= replicas are left out, and each
  // replica below it of the parts below `parts` is expected. 0: every registered replica, and
  // replica 0 of a part without any entry is the one listed as missing.
  int replicas = 0;
};

struct ServerTarget {
  int part = 0;
  int replica = 0;
  std::string address;   // empty when the server is not registered: `missing` says why
  absl::Status missing;  // OK when `address` is set
};

// "part P", or "part P replica R" for R > 0 (how tools name a server in their output).
std::string ServerName(int part, int replica);

// InvalidArgument unless exactly one of `servers` and `registry` is given and the servers list
// parses (naming the bad entry), or when `parts` or `replicas` is negative.
absl::Status CheckServerSource(const ServerListOptions& options);

// The servers to ask now, by part, then replica. Errors of CheckServerSource. With a registry:
// NotFound naming the folder when it cannot be read and `parts` is 0 (with parts > 0 every
// expected server is listed missing instead: the first server may not have created it yet); an
// entry that cannot be read (DataLoss: malformed) is listed with that error in `missing`; one
// removed since the folder was listed is left out, or listed missing when expected.
absl::StatusOr<std::vector<ServerTarget>> ResolveServers(const ServerListOptions& options);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_SERVER_LIST_H_
