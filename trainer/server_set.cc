#include "trainer/server_set.h"

#include <chrono>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/registry.h"
#include "common/status_macros.h"

namespace graphshard::trainer {
namespace {

// Waits until the registry file of `part` exists and parses.
absl::StatusOr<std::string> WaitForRegistryEntry(const std::string& dir, int part,
                                                 absl::Time deadline) {
  while (true) {
    absl::StatusOr<std::string> entry = common::LookupAddress(dir, part);
    if (entry.ok() || !absl::IsNotFound(entry.status())) return entry;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "server of part ", part, " did not register in time: ", entry.status().message()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

absl::Status CheckAgrees(const ServerMetadata& first, const ServerMetadata& md, int index,
                         absl::string_view address) {
  if (md.part != index) {
    return absl::FailedPreconditionError(
        absl::StrCat("server ", address, " listed as part ", index, " serves part ", md.part));
  }
  if (md.num_parts != first.num_parts || md.feat_dim != first.feat_dim ||
      md.num_classes != first.num_classes) {
    return absl::FailedPreconditionError(
        absl::StrCat("server ", address, " (part ", index, ") disagrees with part 0: num_parts ",
                     md.num_parts, " vs ", first.num_parts, ", feat_dim ", md.feat_dim, " vs ",
                     first.feat_dim, ", num_classes ", md.num_classes, " vs ", first.num_classes,
                     " (are they serving the same partition folder?)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServerSet> ConnectServers(const DiscoveryOptions& options) {
  const absl::Time deadline = absl::Now() + absl::Seconds(options.server_wait_s);
  const bool from_registry = !options.registry_dir.empty();
  ServerSet set;
  // The number of parts is known from the list, or from part 0's metadata.
  int num_parts = from_registry ? 1 : static_cast<int>(options.servers.size());
  for (int p = 0; p < num_parts; ++p) {
    std::string address;
    if (from_registry) {
      ASSIGN_OR_RETURN(address, WaitForRegistryEntry(options.registry_dir, p, deadline));
    } else {
      address = options.servers[static_cast<size_t>(p)];
    }
    ASSIGN_OR_RETURN(auto client, PartitionClient::Create(address, options.client));
    absl::Status up = client->WaitUntilServing(deadline);
    if (!up.ok()) {
      return absl::Status(up.code(), absl::StrCat("waiting ", options.server_wait_s, "s for part ",
                                                  p, ": ", up.message()));
    }
    ASSIGN_OR_RETURN(ServerMetadata md, client->GetMetadata());
    if (p == 0) {
      set.metadata = md;
      if (from_registry) {
        num_parts = md.num_parts;
      } else if (md.num_parts != num_parts) {
        return absl::FailedPreconditionError(absl::StrCat("--servers lists ", num_parts,
                                                          " servers but server ", address,
                                                          " reports num_parts ", md.num_parts));
      }
    }
    RETURN_IF_ERROR(CheckAgrees(set.metadata, md, p, address));
    set.clients.push_back(std::move(client));
    set.host_ids.push_back(md.host_id);
  }
  return set;
}

}  // namespace graphshard::trainer
