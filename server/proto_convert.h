#ifndef GRAPHSHARD_SERVER_PROTO_CONVERT_H_
#define GRAPHSHARD_SERVER_PROTO_CONVERT_H_

// The one place where engine structs meet protobuf messages (statuses: rpc/status.h; feature
// dtypes: rpc/feature_dtype_proto.h). Arrays travel as raw little-endian bytes, inline or in
// shared memory.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/bytes.h"
#include "proto/graphshard.pb.h"
#include "server/engine/types.h"
#include "shm/ring.h"

namespace graphshard::server {

// Raw arrays (common/bytes.h); a bad length in a request is InvalidArgument naming the field.
using common::FromBytes;
using common::ToBytes;

absl::StatusOr<engine::TemporalMode> FromProto(v1::TemporalMode mode);
v1::TemporalMode ToProto(engine::TemporalMode mode);
absl::StatusOr<engine::TemporalStrategy> FromProto(v1::TemporalStrategy strategy);
v1::TemporalStrategy ToProto(engine::TemporalStrategy strategy);

absl::StatusOr<engine::OneHopRequest> FromProto(const v1::SampleOneHopRequest& p);
v1::SampleOneHopRequest ToProto(const engine::OneHopRequest& r);
absl::StatusOr<std::vector<engine::HopResult>> FromProto(const v1::SampleOneHopResponse& p);
void ToProto(const std::vector<engine::HopResult>& r, v1::SampleOneHopResponse* p);

absl::StatusOr<std::vector<engine::TypedIds>> FromProto(const v1::GatherFeaturesRequest& p);
v1::GatherFeaturesRequest ToProto(const std::vector<engine::TypedIds>& items,
                                  engine::FeatureDtype dtype, const std::string& client_host_id);
// Reads features inline or from the response's shared-memory segment (unlinking it), which
// must be one the peer with `shm_prefix` made for the asker's `shm_key` (shm::CheckSegmentName;
// DataLoss and nothing opened otherwise).
absl::StatusOr<std::vector<engine::FeatureBlock>> FromProto(const v1::GatherFeaturesResponse& p,
                                                            absl::string_view shm_prefix,
                                                            absl::string_view shm_key);
// Features inline, or into `segment` (ShmBytes(blocks) bytes) when it is not null.
void ToProto(const std::vector<engine::FeatureBlock>& blocks, shm::ShmSegment* segment,
             v1::GatherFeaturesResponse* p);
size_t ShmBytes(const std::vector<engine::FeatureBlock>& blocks);

absl::StatusOr<engine::SamplingConfig> FromProto(const v1::SamplingConfig& p);
absl::StatusOr<engine::MinibatchRequest> FromProto(const v1::SampleMinibatchRequest& p);

// Arrays inline in the message.
void ToProto(const engine::Minibatch& b, v1::Minibatch* p);
// Arrays in `segment` (which must hold ShmBytes(b) bytes); the message carries offsets. The
// feature rows of every block come first, at ShmFeatureOffsets; rows a FeaturePlacer already
// wrote there (NodeBlock::placed_features at that address) are not copied again.
void ToProto(const engine::Minibatch& b, shm::ShmSegment& segment, v1::Minibatch* p);
// The bytes ToProto needs; with `feature_bytes`, for rows of those sizes (before the gather).
size_t ShmBytes(const engine::Minibatch& b, const std::vector<size_t>* feature_bytes = nullptr);
// Where each block's feature rows go in the segment, for rows of `feature_bytes`.
std::vector<size_t> ShmFeatureOffsets(const std::vector<size_t>& feature_bytes);

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_PROTO_CONVERT_H_
