#ifndef GRAPHSHARD_SERVER_ENGINE_PEERS_H_
#define GRAPHSHARD_SERVER_ENGINE_PEERS_H_

// How the engine reaches the other parts: asynchronous one-hop sampling and feature gathers,
// one request per part covering every edge type (node type). The gRPC implementation is
// server/grpc_peers.h; tests may wire LocalParts together directly.

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/types.h"

namespace graphshard::engine {

class LocalPart;

class Peers {
 public:
  template <typename T>
  using Callback = std::function<void(absl::StatusOr<T>)>;

  virtual ~Peers() = default;
  // Each call invokes `done` exactly once, possibly on another thread, possibly before it
  // returns. Implementations must be thread-safe and put a deadline on every remote call.
  virtual void SampleOneHop(int part, OneHopRequest request,
                            Callback<std::vector<HopResult>> done) = 0;
  virtual void GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                              Callback<std::vector<FeatureBlock>> done) = 0;
  // As GatherFeatures, for the rows of layer table `table` (nonzero; layer_tables.h) instead
  // of the features. Unimplemented unless the implementation reaches tables.
  virtual void GatherTable(int part, uint64_t table, std::vector<TypedIds> items,
                           FeatureDtype dtype, Callback<std::vector<FeatureBlock>> done) {
    (void)part, (void)table, (void)items, (void)dtype;
    done(absl::UnimplementedError("these peers do not serve layer tables"));
  }

  // Part `part` readable in this process (e.g. a same-host peer's part mapped read-only), or
  // nullptr: the engine then asks GatherFeatures. When not null, the engine copies that part's
  // feature rows and labels straight into the minibatch (no request, no intermediate copy); the
  // part must be the same data the peer serves and must outlive the Peers. Thread-safe; may
  // block the first time a part is asked (implementations may call the peer and load files).
  virtual const LocalPart* MappedPart(int part) {
    (void)part;
    return nullptr;
  }
  // As MappedPart, for sampling: when not null, the engine samples that part's neighbours
  // in-process instead of asking SampleOneHop (the same draws: they depend only on the request
  // seed and the node).
  virtual const LocalPart* SamplingPart(int part) {
    (void)part;
    return nullptr;
  }
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_PEERS_H_
