#include "client/part_directory.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/poll.h"
#include "common/registry.h"
#include "common/status_macros.h"

namespace graphshard::client {

absl::Status CheckAgrees(const ServerMetadata& first, const ServerMetadata& md, int part,
                         absl::string_view label) {
  if (md.part != part) {
    return absl::FailedPreconditionError(
        absl::StrCat(label, " listed as part ", part, " serves part ", md.part));
  }
  if (md.num_parts != first.num_parts || md.feat_dim != first.feat_dim ||
      md.num_classes != first.num_classes) {
    return absl::FailedPreconditionError(absl::StrCat(
        label, " disagrees with part 0: num_parts ", md.num_parts, " vs ", first.num_parts,
        ", feat_dim ", md.feat_dim, " vs ", first.feat_dim, ", num_classes ", md.num_classes,
        " vs ", first.num_classes, " (are they serving the same partition folder?)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> PartDirectory::Replicas(int part) const {
  if (!options_.registry_dir.empty()) return common::LookupReplicas(options_.registry_dir, part);
  if (part < 0 || part >= std::ssize(options_.servers)) {
    return absl::NotFoundError(absl::StrCat("part ", part, " is not in --servers (",
                                            options_.servers.size(), " entries)"));
  }
  return common::SplitReplicas(options_.servers[static_cast<size_t>(part)]);
}

absl::StatusOr<PartitionClient*> PartDirectory::Client(int part, const std::string& address) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<PartitionClient>& client = clients_[{part, address}];
  if (client == nullptr) {
    ASSIGN_OR_RETURN(client, PartitionClient::Create(address, options_.client, part));
    if (hooks_.has_value()) client->SetRingMapHooks(*hooks_);
  }
  return client.get();
}

void PartDirectory::SetRingMapHooks(shm::ShmRingReader::MapHooks hooks) {
  absl::MutexLock lock(&mu_);
  for (auto& [key, client] : clients_) client->SetRingMapHooks(hooks);
  hooks_ = std::move(hooks);
}

absl::StatusOr<ServerMetadata> PartDirectory::Probe(PartitionClient& client, int part,
                                                    const ServerMetadata* expected) {
  RETURN_IF_ERROR(client.CheckServing(absl::Now() + options_.probe_timeout));
  ASSIGN_OR_RETURN(ServerMetadata md, client.GetMetadata());
  {
    absl::MutexLock lock(&mu_);
    host_of_[client.address()] = md.host_id;
  }
  if (md.part != part) {
    return absl::FailedPreconditionError(
        absl::StrCat(client.Label(), " listed as part ", part, " serves part ", md.part));
  }
  if (expected != nullptr) RETURN_IF_ERROR(CheckAgrees(*expected, md, part, client.Label()));
  return md;
}

std::vector<std::string> PartDirectory::TryOrder(const std::vector<std::string>& replicas,
                                                 int preferred, const std::string& host_id) {
  // Rotated by `preferred`, then stably grouped: this host, not yet asked, other hosts.
  const int n = static_cast<int>(replicas.size());
  std::vector<std::pair<int, std::string>> order;
  {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < n; ++i) {
      const std::string& a = replicas[static_cast<size_t>(((preferred + i) % n + n) % n)];
      auto known = host_of_.find(a);
      const int group = known == host_of_.end()                        ? 1
                        : !host_id.empty() && known->second == host_id ? 0
                                                                       : 2;
      order.emplace_back(group, a);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [group, address] : order) out.push_back(std::move(address));
  return out;
}

absl::StatusOr<PartDirectory::LiveServer> PartDirectory::LiveOnce(
    int part, int preferred, const ServerMetadata* expected, const std::string& host_id,
    const std::function<bool()>& cancelled) {
  absl::StatusOr<std::vector<std::string>> replicas = Replicas(part);
  // Not registered yet: a server may still register before the deadline.
  if (absl::IsNotFound(replicas.status())) {
    return absl::UnavailableError(replicas.status().message());
  }
  if (!replicas.ok()) return replicas.status();
  std::vector<std::string> problems;
  for (const std::string& address : TryOrder(*replicas, preferred, host_id)) {
    ASSIGN_OR_RETURN(PartitionClient * client, Client(part, address));
    absl::StatusOr<ServerMetadata> md = Probe(*client, part, expected);
    if (md.ok()) return LiveServer{client, *std::move(md)};
    if (absl::IsFailedPrecondition(md.status())) return md.status();  // another graph
    problems.push_back(std::string(md.status().message()));
    if (cancelled && cancelled()) return absl::CancelledError("cancelled");
  }
  if (cancelled && cancelled()) return absl::CancelledError("cancelled");
  return absl::UnavailableError(absl::StrJoin(problems, "; "));
}

absl::StatusOr<PartDirectory::LiveServer> PartDirectory::Live(
    int part, int preferred, const ServerMetadata* expected, absl::Time deadline,
    const std::string& host_id, const std::function<bool()>& cancelled) {
  common::PollOptions poll;
  poll.deadline = deadline;
  poll.interval = absl::Milliseconds(200);
  poll.timeout_message = absl::StrCat("no live server for part ", part);
  poll.cancelled = cancelled;
  absl::optional<LiveServer> live;
  RETURN_IF_ERROR(common::PollUntil(poll, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(live, LiveOnce(part, preferred, expected, host_id, cancelled));
    return absl::OkStatus();
  }));
  return *std::move(live);
}

void PartDirectory::LearnHosts(int part) {
  absl::StatusOr<std::vector<std::string>> replicas = Replicas(part);
  if (!replicas.ok()) return;
  for (const std::string& address : *replicas) {
    absl::StatusOr<PartitionClient*> client = Client(part, address);
    if (client.ok()) Probe(**client, part, nullptr).IgnoreError();
  }
}

}  // namespace graphshard::client
