#ifndef GRAPHSHARD_CLIENT_INTERNAL_WIRE_H_
#define GRAPHSHARD_CLIENT_INTERNAL_WIRE_H_

// Proto <-> plain struct conversions of the trainer (the one proto conversion file of trainer/).
// Decoders validate everything a server sends: byte lengths, counts, index ranges. Raw arrays
// go through common/bytes.h.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/batch_client.h"
#include "proto/graphshard.pb.h"
#include "shm/ring.h"

namespace graphshard::client::internal {

// DataLoss for an inconsistent answer: part outside num_parts, a target type without classes,
// an edge type naming an unknown node type.
absl::StatusOr<ServerMetadata> DecodeMetadata(const v1::Metadata& m);

v1::StreamBatchesRequest EncodeStreamRequest(const StreamOptions& options);

// Reads `m` in place (the result shares ownership of `m`; with shm_name set, the segment is
// mapped, its name unlinked, and the mapping owned by the result too). DataLoss unless the
// blocks match `md`'s node and edge types in order, 0 < batch_size <= rows of the seed type,
// every array has the length its counts imply (features: num_nodes * feat_dim elements of the
// batch's dtype), and every edge index is inside its block; NotFound if the segment is gone.
// A ring segment (m.shm_ring) is read through `ring` (the client's; required then): the result
// holds a lease that releases the segment to the server when the batch is gone.
absl::StatusOr<MinibatchData> DecodeMinibatch(std::shared_ptr<const v1::Minibatch> m,
                                              const ServerMetadata& md,
                                              shm::ShmRingReader* ring = nullptr);

}  // namespace graphshard::client::internal

#endif  // GRAPHSHARD_CLIENT_INTERNAL_WIRE_H_
