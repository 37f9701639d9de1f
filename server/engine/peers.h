#ifndef GRAPHSHARD_SERVER_ENGINE_PEERS_H_
#define GRAPHSHARD_SERVER_ENGINE_PEERS_H_

// How the engine reaches the other parts: asynchronous one-hop sampling and feature gathers,
// one request per part covering every edge type (node type). The gRPC implementation is
// server/grpc_peers.h; tests may wire LocalParts together directly.

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "server/engine/types.h"

namespace graphshard::engine {

class LocalPart;

// A peer's answer as handed over, finished by whoever takes it. A transport calls back on its
// own I/O thread (one per connection at a time): what costs CPU after the bytes arrived
// (decoding, merging cached rows, widening) goes into a deferred answer, so that it runs on the
// thread that waits for the answer (a batch builder) and the I/O thread goes back to reading.
// Implicit from a ready result, so that `done(result)` and `done(status)` read as before.
template <typename T>
class Answer {
 public:
  Answer(absl::StatusOr<T> ready) : ready_(std::move(ready)) {}  // NOLINT: implicit on purpose
  Answer(absl::Status error) : ready_(std::move(error)) {}       // NOLINT
  Answer(T value) : ready_(std::move(value)) {}                  // NOLINT
  // `finish` runs once, in Take(), on the taker's thread.
  static Answer Deferred(absl::AnyInvocable<absl::StatusOr<T>() &&> finish) {
    Answer a(absl::InternalError("deferred answer"));
    a.finish_ = std::move(finish);
    return a;
  }
  Answer(Answer&&) = default;
  Answer& operator=(Answer&&) = default;

  // The result, finished here if it was deferred. Call once.
  absl::StatusOr<T> Take() && {
    if (finish_) return std::move(finish_)();
    return std::move(ready_);
  }

 private:
  absl::StatusOr<T> ready_;
  absl::AnyInvocable<absl::StatusOr<T>() &&> finish_;
};

class Peers {
 public:
  template <typename T>
  using Callback = std::function<void(Answer<T>)>;

  virtual ~Peers() = default;
  // Each call invokes `done` exactly once, possibly on another thread, possibly before it
  // returns; `done` should not finish a deferred answer there (it would run on the transport's
  // thread) but hand it to the waiting thread. Implementations must be thread-safe and put a
  // deadline on every remote call.
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

// A Peers that forwards every call to `inner` (which must outlive it): the base of decorators,
// which override what they change.
class ForwardingPeers : public Peers {
 public:
  explicit ForwardingPeers(Peers& inner) : inner_(inner) {}

  void SampleOneHop(int part, OneHopRequest request,
                    Callback<std::vector<HopResult>> done) override {
    inner_.SampleOneHop(part, std::move(request), std::move(done));
  }
  void GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                      Callback<std::vector<FeatureBlock>> done) override {
    inner_.GatherFeatures(part, std::move(items), dtype, std::move(done));
  }
  void GatherTable(int part, uint64_t table, std::vector<TypedIds> items, FeatureDtype dtype,
                   Callback<std::vector<FeatureBlock>> done) override {
    inner_.GatherTable(part, table, std::move(items), dtype, std::move(done));
  }
  const LocalPart* MappedPart(int part) override { return inner_.MappedPart(part); }
  const LocalPart* SamplingPart(int part) override { return inner_.SamplingPart(part); }

 protected:
  Peers& inner_;
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_PEERS_H_
