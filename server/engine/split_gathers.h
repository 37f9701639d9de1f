#ifndef GRAPHSHARD_SERVER_ENGINE_SPLIT_GATHERS_H_
#define GRAPHSHARD_SERVER_ENGINE_SPLIT_GATHERS_H_

// engine::Peers decorator that asks a peer for a large GatherFeatures answer in pieces, all in
// flight at once (docs/SERVER.md, "Peer answers in pieces"). One answer of tens of MiB is
// received into one fresh array (from 32-64 MiB on, freshly mapped and faulted in page by page)
// and gathered by one of the peer's threads; pieces of a few MiB reuse the allocator's memory
// and are gathered by several threads at once (tests/bench/RESULTS.md, "Peer answers in
// pieces"). The answer is the inner Peers' answer row for row: each block's rows point into the
// pieces' blocks (FeatureBlock::rows), which its `keep` holds; nothing is copied but the labels.
// Every other call is forwarded unchanged (ForwardingPeers). Thread-safe.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "server/engine/local_part.h"
#include "server/engine/peers.h"

namespace graphshard::engine {

// Most feature bytes (rows and labels, in the dtype asked) that one piece of a GatherFeatures
// asks a peer for. A request at or below it goes to the inner Peers whole.
inline constexpr int64_t kDefaultGatherPieceBytes = int64_t{4} << 20;

class SplitGathers final : public ForwardingPeers {
 public:
  // `inner` must outlive this object. `feat_dims`: every node type's feature width (the same
  // in every part); a request naming a type not in it goes to the inner Peers whole.
  SplitGathers(Peers& inner, std::map<std::string, int64_t> feat_dims,
               int64_t piece_bytes = kDefaultGatherPieceBytes);
  // The feature widths of `local`'s node types.
  static std::map<std::string, int64_t> FeatDimsOf(const LocalPart& local);

  // Pieces of at most piece_bytes (an item is cut between rows; a piece may hold parts of
  // several items); the first error of any piece is the answer's. Each piece carries the inner
  // Peers' own deadline.
  void GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                      Callback<std::vector<FeatureBlock>> done) override;

 private:
  const std::map<std::string, int64_t> feat_dims_;
  const int64_t piece_bytes_;
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_SPLIT_GATHERS_H_
