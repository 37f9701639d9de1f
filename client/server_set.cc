#include "client/server_set.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace graphshard::client {

absl::StatusOr<ServerSet> ConnectServers(const DiscoveryOptions& options) {
  const absl::Time deadline = absl::Now() + absl::Seconds(options.server_wait_s);
  const bool from_registry = !options.registry_dir.empty();
  ServerSet set;
  set.directory = std::make_unique<PartDirectory>(PartDirectoryOptions{
      .registry_dir = options.registry_dir, .servers = options.servers, .client = options.client});
  // The number of parts is known from the list, or from part 0's metadata.
  int num_parts = from_registry ? 1 : static_cast<int>(options.servers.size());
  for (int p = 0; p < num_parts; ++p) {
    // Every rank takes the first live replica in registry order: the parts' hosts (host_ids,
    // which decide the host-local assignment) must be the same on every rank.
    absl::StatusOr<PartDirectory::LiveServer> live =
        set.directory->Live(p, 0, p == 0 ? nullptr : &set.metadata, deadline);
    if (absl::IsUnavailable(live.status())) {
      return absl::DeadlineExceededError(absl::StrCat(
          "waiting ", options.server_wait_s, "s for part ", p, ": ", live.status().message()));
    }
    if (!live.ok()) return live.status();
    if (p == 0) {
      set.metadata = live->metadata;
      if (from_registry) {
        num_parts = live->metadata.num_parts;
      } else if (live->metadata.num_parts != num_parts) {
        return absl::FailedPreconditionError(
            absl::StrCat("--servers lists ", num_parts, " servers but ", live->client->Label(),
                         " reports num_parts ", live->metadata.num_parts));
      }
    }
    set.directory->LearnHosts(p);
    set.clients.push_back(live->client);
    set.host_ids.push_back(live->metadata.host_id);
    // Each count is >= 0 (checked on arrival); a sum past int64 says "too many to hold".
    set.num_edges = live->metadata.num_local_edges > INT64_MAX - set.num_edges
                        ? INT64_MAX
                        : set.num_edges + live->metadata.num_local_edges;
  }
  return set;
}

}  // namespace graphshard::client
