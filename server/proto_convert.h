#ifndef GRAPHSHARD_SERVER_PROTO_CONVERT_H_
#define GRAPHSHARD_SERVER_PROTO_CONVERT_H_

// The one place where engine structs meet protobuf messages (and absl::Status meets
// grpc::Status). Arrays travel as raw little-endian bytes, inline or in shared memory.

#include <cstring>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "proto/graphshard.pb.h"
#include "server/engine/types.h"
#include "shm/ring.h"

namespace graphshard::server {

template <typename T>
std::string ToBytes(absl::Span<const T> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// InvalidArgument naming `field` if the length is not a multiple of sizeof(T).
template <typename T>
absl::StatusOr<std::vector<T>> FromBytes(const std::string& bytes, absl::string_view field) {
  if (bytes.size() % sizeof(T) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", bytes.size(),
                                                   " bytes is not a multiple of ", sizeof(T)));
  }
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

absl::StatusOr<engine::FeatureDtype> FromProto(v1::FeatureDtype dtype);
v1::FeatureDtype ToProto(engine::FeatureDtype dtype);

absl::StatusOr<engine::OneHopRequest> FromProto(const v1::SampleOneHopRequest& p);
v1::SampleOneHopRequest ToProto(const engine::OneHopRequest& r);
absl::StatusOr<std::vector<engine::HopResult>> FromProto(const v1::SampleOneHopResponse& p);
void ToProto(const std::vector<engine::HopResult>& r, v1::SampleOneHopResponse* p);

absl::StatusOr<std::vector<engine::TypedIds>> FromProto(const v1::GatherFeaturesRequest& p);
v1::GatherFeaturesRequest ToProto(const std::vector<engine::TypedIds>& items,
                                  engine::FeatureDtype dtype, const std::string& client_host_id);
// Reads features inline or from the response's shared-memory segment (unlinking it).
absl::StatusOr<std::vector<engine::FeatureBlock>> FromProto(const v1::GatherFeaturesResponse& p);
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
