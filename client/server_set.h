#ifndef GRAPHSHARD_CLIENT_SERVER_SET_H_
#define GRAPHSHARD_CLIENT_SERVER_SET_H_

// Finding and connecting to the K partition servers (docs/DESIGN.md, "Finding servers"): from a
// registry folder (DIR/part_<k>[.r<r>] holds "host:port\n", written atomically by each server)
// or an explicit list (index = part; "a:1+b:1" lists replicas). Waits, with one deadline for
// all, until a server of every part is registered and reports SERVING; then checks that the
// servers agree on the graph. The set keeps a PartDirectory for finding parts again later.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/batch_client.h"
#include "client/part_directory.h"

namespace graphshard::client {

struct DiscoveryOptions {
  std::string registry_dir;  // one of these two
  std::vector<std::string> servers;
  double server_wait_s = 60;
  ClientOptions client;
};

struct ServerSet {
  ServerMetadata metadata;  // of part 0; every server agrees on num_parts, feat_dim, classes
  // Owns every client; finds live replicas of a part again (registry read anew).
  std::unique_ptr<PartDirectory> directory;
  // index = part: the replica found at the start (the first live one in registry order, the
  // same on every rank); owned by `directory`.
  std::vector<PartitionClient*> clients;
  std::vector<std::string> host_ids;  // index = part: that replica's Metadata.host_id
  // Every part's num_local_edges summed: the graph's directed edges (what a reader of the whole
  // topology holds, client/graph_topology.h), as the servers report them.
  int64_t num_edges = 0;
};

// The registry is read with common::LookupReplicas (DataLoss naming the file for a malformed
// entry). DeadlineExceeded naming the server (part and address, or the registry file) that was
// not up in time; FailedPrecondition when servers disagree (num_parts, feat_dim, num_classes, or a
// server at index p reporting another part).
absl::StatusOr<ServerSet> ConnectServers(const DiscoveryOptions& options);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_SERVER_SET_H_
