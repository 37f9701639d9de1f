#ifndef GRAPHSHARD_CLIENT_PART_DIRECTORY_H_
#define GRAPHSHARD_CLIENT_PART_DIRECTORY_H_

// Where each part is served now: the replicas of a part, read again from the registry folder
// (or the --servers entry "a:1+b:1") on every look-up, so that a server restarted on a new port,
// or another replica, is found after a failure (docs/DEPLOY.md, "Failure model"). A registry
// entry is not trusted: a replica is used only after it answers SERVING and reports the part and
// layout the run started with. One PartitionClient per address, kept for the run (its
// shared-memory ring mapping with it). Thread-safe.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "client/batch_client.h"
#include "shm/ring.h"

namespace graphshard::client {

struct PartDirectoryOptions {
  std::string registry_dir;          // one of these two
  std::vector<std::string> servers;  // index = part; "a:1" or "a:1+b:1"
  ClientOptions client;
  // Each health probe of a replica waits at most this long (a stopped server costs this much
  // before the next replica is tried).
  absl::Duration probe_timeout = absl::Seconds(2);
};

class PartDirectory {
 public:
  explicit PartDirectory(PartDirectoryOptions options) : options_(std::move(options)) {}

  // The part's replicas now. NotFound when none is registered; DataLoss / InvalidArgument for a
  // malformed entry (naming it).
  absl::StatusOr<std::vector<std::string>> Replicas(int part) const;

  struct LiveServer {
    PartitionClient* client = nullptr;
    ServerMetadata metadata;
  };
  // A replica of `part` that answers SERVING, serves `part` and agrees with `expected` (if given:
  // num_parts, feat_dim, num_classes). Replicas known to be on host `host_id` (non-empty) are
  // tried first, then those not yet asked, then the others; within each group from index
  // `preferred` (modulo their number) on; all again until `deadline`. Unavailable naming each
  // replica's last problem when none is live by then; FailedPrecondition for a replica that
  // disagrees; DataLoss for a malformed registry entry; Cancelled once `cancelled` returns true.
  absl::StatusOr<LiveServer> Live(int part, int preferred, const ServerMetadata* expected,
                                  absl::Time deadline, const std::string& host_id = "",
                                  const std::function<bool()>& cancelled = nullptr);

  // Asks every registered replica of `part` once for its host (ignoring failures), so that
  // Live() can prefer same-host replicas.
  void LearnHosts(int part);

  // The client of `address` for `part` (made once, kept for the run).
  absl::StatusOr<PartitionClient*> Client(int part, const std::string& address);

  const ClientOptions& client_options() const { return options_.client; }

  // Ring map hooks (PartitionClient::SetRingMapHooks) for every client, made or to be made;
  // before the first stream.
  void SetRingMapHooks(shm::ShmRingReader::MapHooks hooks);

 private:
  // The replica's metadata when it answers SERVING and agrees; the problem otherwise.
  absl::StatusOr<ServerMetadata> Probe(PartitionClient& client, int part,
                                       const ServerMetadata* expected);
  // `replicas` in the order Live() tries them.
  std::vector<std::string> TryOrder(const std::vector<std::string>& replicas, int preferred,
                                    const std::string& host_id);
  // One round of Live(): the first live replica; Unavailable naming each replica's problem (or
  // that none has registered) when none is live now; Live()'s other errors as they are.
  absl::StatusOr<LiveServer> LiveOnce(int part, int preferred, const ServerMetadata* expected,
                                      const std::string& host_id,
                                      const std::function<bool()>& cancelled);

  const PartDirectoryOptions options_;
  absl::Mutex mu_;
  std::map<std::pair<int, std::string>, std::unique_ptr<PartitionClient>> clients_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> host_of_ ABSL_GUARDED_BY(mu_);  // address -> host id
  absl::optional<shm::ShmRingReader::MapHooks> hooks_ ABSL_GUARDED_BY(mu_);
};

// FailedPrecondition naming the server unless `md` (of the server at `label`, listed as part
// `part`) agrees with `first` on num_parts, feat_dim and num_classes and serves `part`.
absl::Status CheckAgrees(const ServerMetadata& first, const ServerMetadata& md, int part,
                         absl::string_view label);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_PART_DIRECTORY_H_
