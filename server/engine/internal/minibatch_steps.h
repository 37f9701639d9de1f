#ifndef GRAPHSHARD_SERVER_ENGINE_INTERNAL_MINIBATCH_STEPS_H_
#define GRAPHSHARD_SERVER_ENGINE_INTERNAL_MINIBATCH_STEPS_H_

// The two phases of BuildCheckedMinibatch (build_minibatch.h, in minibatch_builder.cc), one file
// each: RunHop samples one hop (sample_hop.cc), GatherAll fills the finished batch's feature
// rows and labels (gather_rows.cc). Both run per batch: they ask every owner part once
// (ask_parts.h) and merge the answers in a fixed order, so the batch is a deterministic
// function of the request.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/engine/internal/link_seeds.h"
#include "server/engine/internal/node_index.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/engine/types.h"

namespace graphshard::engine::internal {

// How many nodes a long loop goes between two looks at the request's CancelFn.
inline constexpr size_t kCancelCheckEvery = 4096;

// Cancelled once request.cancelled (if set) says so, else OK.
inline absl::Status CheckCancelled(const MinibatchRequest& request) {
  if (request.cancelled && request.cancelled()) {
    return absl::CancelledError("the request was cancelled");
  }
  return absl::OkStatus();
}

// Where one node's answer lives: the part asked, the item of that part's request, the position
// in the item. GatherAll uses item -1 for a row read directly from a part mapped in-process.
struct Slot {
  int part = 0;
  int item = 0;
  int64_t pos = 0;
};

// One hop: asks every owner once (all edge types), then merges in edge type order, frontier
// order. Appends the new nodes to `types` (relabelled, one NodeIndex per node type), this hop's
// edges to `edges` (one block per edge type, num_sampled_edges grows by one), and moves each
// type's frontier to the nodes it added.
// `seed_times` (temporal only): the time of each tree, inherited by every node sampled in it.
// `link`: a link batch's edges to leave out (its supervision edges), or nullptr.
// Cancelled when the request is; Internal for a malformed answer, naming the part; a peer's
// error comes back prefixed with its part.
absl::Status RunHop(const LocalPart& local, Peers& peers, const MinibatchRequest& request,
                    const std::vector<int64_t>& seed_times, int hop, std::vector<NodeIndex>& types,
                    std::vector<EdgeBlock>& edges, const LinkSeeds* link, BuildProfile& profile);

// Features and labels of every node of `batch` (its node blocks have their ids and feat_dim),
// one request per owner covering every node type; with SamplingConfig::without_features, the
// seeds' labels only. Rows go where request.place_features puts them, else into the blocks'
// own `features`. Errors as RunHop's.
absl::Status GatherAll(const LocalPart& local, Peers& peers, const MinibatchRequest& request,
                       Minibatch& batch, BuildProfile& profile);

}  // namespace graphshard::engine::internal

#endif  // GRAPHSHARD_SERVER_ENGINE_INTERNAL_MINIBATCH_STEPS_H_
