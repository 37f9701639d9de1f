#ifndef GRAPHSHARD_SERVER_ENGINE_INTERNAL_BUILD_MINIBATCH_H_
#define GRAPHSHARD_SERVER_ENGINE_INTERNAL_BUILD_MINIBATCH_H_

// BuildMinibatch (minibatch_builder.h) behind its request checks, for a caller that checked once
// what many batches share: EpochStream::Start validates the seed type, the whole seed shard and
// the sampling config when the stream starts, and every batch is a piece of that shard, so the
// batches skip the checks. Defined in minibatch_builder.cc.

#include "absl/status/statusor.h"
#include "server/engine/local_part.h"
#include "server/engine/internal/link_seeds.h"
#include "server/engine/peers.h"
#include "server/engine/types.h"

namespace graphshard::engine::internal {

// Preconditions (the caller checked them): `seed_type` is the index in local.node_types() of
// request.seed_type (or of local.target_type() when it is empty); `hops` is what
// ValidateSampling(local, request.sampling) returned; the seeds are 1..max_batch_size ids that
// `local` owns. A seed repeated outside disjoint mode is still InvalidArgument (relabelling
// finds it at no extra cost); peers' errors come back naming the part.
// `link` (or nullptr): a link batch (link_seeds.h): its endpoints are the seeds (request.seeds
// empty), its positives are left out of message passing, Minibatch::link is filled, and
// batch_size is the number of supervision edges.
absl::StatusOr<Minibatch> BuildCheckedMinibatch(const LocalPart& local, Peers& peers,
                                                const MinibatchRequest& request, int seed_type,
                                                int hops, const LinkSeeds* link);

}  // namespace graphshard::engine::internal

#endif  // GRAPHSHARD_SERVER_ENGINE_INTERNAL_BUILD_MINIBATCH_H_
