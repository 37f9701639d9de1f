#ifndef GRAPHSHARD_SERVER_ENGINE_ANY_PART_ROWS_H_
#define GRAPHSHARD_SERVER_ENGINE_ANY_PART_ROWS_H_

// Feature rows of ids owned by any part (proto GatherFeaturesRequest.any_part): the rows of the
// local part and of parts mapped in this process are copied directly, the other owners asked
// through `peers` (one request per owner covering every item, all at once; with a CachedPeers,
// through its hot-row cache). The trainer's remote tier asks its own host's server this way, so
// that rows of other hosts' parts travel over the servers' data plane and a host's trainers
// share the servers' cache (docs/DESIGN.md, "The tiered feature store").

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/engine/types.h"

namespace graphshard::engine {

// One FeatureBlock per item, in order (rows in `dtype`, labels), as LocalPart::GatherFeatures
// answers for local ids. InvalidArgument naming the item for an unknown node type or an id
// outside [0, nodes of the type); Cancelled when `cancelled` says so; a peer's error names its
// part. Thread-safe if `peers` is.
absl::StatusOr<std::vector<FeatureBlock>> GatherRowsOfAnyPart(const LocalPart& local,
                                                              Peers& peers,
                                                              absl::Span<const TypedIds> items,
                                                              FeatureDtype dtype,
                                                              const CancelFn& cancelled);

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_ANY_PART_ROWS_H_
