#ifndef GRAPHSHARD_TRAINER_INTERNAL_WIRE_H_
#define GRAPHSHARD_TRAINER_INTERNAL_WIRE_H_

// Proto <-> plain struct conversions of the trainer (the one proto conversion file of trainer/).
// Decoders validate everything a server sends: byte lengths, counts, index ranges.

#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/graphshard.pb.h"
#include "trainer/batch_client.h"

namespace graphshard::trainer::internal {

// int64 LE bytes; DataLoss naming `what` if the length is not a multiple of 8.
absl::StatusOr<std::vector<int64_t>> DecodeInt64s(const std::string& bytes, absl::string_view what);
std::string EncodeInt64s(absl::Span<const int64_t> values);

absl::StatusOr<ServerMetadata> DecodeMetadata(const v1::Metadata& m);

// DataLoss unless: batch_size == expected_batch_size <= num_nodes, node_ids[0, batch_size) equal
// the requested seeds in order, features hold num_nodes * feat_dim floats, labels num_nodes,
// edge_src/edge_dst the same length with every index in [0, num_nodes).
absl::StatusOr<MinibatchData> DecodeMinibatch(v1::Minibatch& m,
                                              absl::Span<const int64_t> requested_seeds);

}  // namespace graphshard::trainer::internal

#endif  // GRAPHSHARD_TRAINER_INTERNAL_WIRE_H_
