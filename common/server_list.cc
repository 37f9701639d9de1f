#include "common/server_list.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/registry.h"
#include "common/status_macros.h"

namespace graphshard::common {
namespace {

absl::StatusOr<std::vector<ServerTarget>> FromList(const std::string& servers) {
  ASSIGN_OR_RETURN(std::vector<std::string> parts, ParseAddressList(servers));
  std::vector<ServerTarget> out;
  for (int p = 0; p < std::ssize(parts); ++p) {
    ASSIGN_OR_RETURN(std::vector<std::string> replicas,
                     SplitReplicas(parts[static_cast<size_t>(p)]));
    for (int r = 0; r < std::ssize(replicas); ++r) {
      out.push_back({p, r, std::move(replicas[static_cast<size_t>(r)]), absl::OkStatus()});
    }
  }
  return out;
}

bool Wanted(const ServerListOptions& o, const RegistryEntry& e) {
  return (o.parts == 0 || e.part < o.parts) && (o.replicas == 0 || e.replica < o.replicas);
}

absl::StatusOr<std::vector<ServerTarget>> FromRegistry(const ServerListOptions& o) {
  absl::StatusOr<std::vector<RegistryEntry>> entries = ListRegistry(o.registry);
  if (!entries.ok() && o.parts == 0) return entries.status();
  std::vector<ServerTarget> out;
  std::set<std::pair<int, int>> found;  // (part, replica) listed
  std::set<int> found_parts;
  for (const RegistryEntry& e : entries.ok() ? *entries : std::vector<RegistryEntry>()) {
    if (!Wanted(o, e)) continue;
    ServerTarget t{e.part, e.replica, "", absl::OkStatus()};
    absl::StatusOr<std::string> address =
        ReadRegistryEntry(RegistryFile(o.registry, e.part, e.replica));
    if (absl::IsNotFound(address.status())) continue;  // unregistered since the listing
    if (address.ok()) {
      t.address = *std::move(address);
    } else {
      t.missing = address.status();
    }
    found.emplace(e.part, e.replica);
    found_parts.insert(e.part);
    out.push_back(std::move(t));
  }
  for (int p = 0; p < o.parts; ++p) {
    for (int r = 0; r < std::max(o.replicas, 1); ++r) {
      // replicas == 0: any registered replica stands for the part.
      if (o.replicas == 0 ? found_parts.count(p) > 0 : found.count({p, r}) > 0) continue;
      const std::string file = RegistryFile(o.registry, p, r);
      out.push_back(
          {p, r, "",
           absl::NotFoundError(absl::StrCat("not registered (", file, " does not exist)"))});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const ServerTarget& a, const ServerTarget& b) {
    return std::make_pair(a.part, a.replica) < std::make_pair(b.part, b.replica);
  });
  return out;
}

}  // namespace

std::string ServerName(int part, int replica) {
  return replica == 0 ? absl::StrCat("part ", part)
                      : absl::StrCat("part ", part, " replica ", replica);
}

absl::Status CheckServerSource(const ServerListOptions& options) {
  if (options.servers.empty() == options.registry.empty()) {
    return absl::InvalidArgumentError(
        options.servers.empty()
            ? "give --registry DIR or --servers HOST:PORT,..."
            : "--registry and --servers both given: give one of them (where to find the servers)");
  }
  if (options.parts < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--parts must be >= 0 (got ", options.parts, ")"));
  }
  if (options.replicas < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas must be >= 0 (got ", options.replicas, ")"));
  }
  if (!options.servers.empty()) return FromList(options.servers).status();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ServerTarget>> ResolveServers(const ServerListOptions& options) {
  RETURN_IF_ERROR(CheckServerSource(options));
  if (!options.servers.empty()) return FromList(options.servers);
  return FromRegistry(options);
}

}  // namespace graphshard::common
