#ifndef GRAPHSHARD_SERVER_ENGINE_MINIBATCH_BUILDER_H_
#define GRAPHSHARD_SERVER_ENGINE_MINIBATCH_BUILDER_H_

// Multi-hop neighbour sampling on the server (DESIGN.md, "Data flow"): per hop the frontier is
// split by owner and each peer gets ONE request, all peers concurrently, the local part answered
// in-process meanwhile; then nodes are relabelled and features and labels gathered the same way.

#include "absl/status/statusor.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/engine/types.h"

namespace graphshard::engine {

// Thread-safe if `peers` is; `local` and `peers` must outlive the call. The result is a
// deterministic function of the request (and the partitioned graph). InvalidArgument for an
// empty or oversized batch, duplicate seeds, seeds not owned locally, bad fanouts or too many
// hops; a peer's error is returned with the part it came from.
absl::StatusOr<Minibatch> BuildMinibatch(const LocalPart& local, Peers& peers,
                                         const MinibatchRequest& request);

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_MINIBATCH_BUILDER_H_
