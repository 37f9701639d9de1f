#ifndef GRAPHSHARD_SERVER_BULK_CODEC_H_
#define GRAPHSHARD_SERVER_BULK_CODEC_H_

// The peer calls on the bulk transport (docs/TRANSPORT.md): engine requests and results as
// transport arrays, the counterpart of proto_convert.h for gRPC. Bodies point straight at the
// engine's vectors (no serialisation copy); received feature rows are moved, not copied, into
// the FeatureBlocks. Requests that do not decode are InvalidArgument, answers DataLoss, naming
// the array. Thread-safe: pure functions.
//
//   SampleOneHop   request: [meta, seeds of item 0, seeds of item 1, ...]
//                    meta = u8 replace, u32 items, per item {i32 fanout, u64 seed, u32 name
//                    bytes, name}; seeds int64
//                  answer: [counts of item 0, neighbours of item 0, counts of item 1, ...] int64
//   GatherFeatures request: [meta, ids of item 0, ...]
//                    meta = u32 dtype, u32 items, per item {u32 name bytes, name}; ids int64
//                  answer: [feat_dim per item (int64), rows of item 0, labels of item 0, ...]

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/types.h"
#include "transport/transport.h"

namespace graphshard::server {

inline constexpr uint16_t kBulkSampleOneHop = 1;
inline constexpr uint16_t kBulkGatherFeatures = 2;

std::unique_ptr<transport::Body> EncodeOneHopRequest(engine::OneHopRequest request);
absl::StatusOr<engine::OneHopRequest> DecodeOneHopRequest(transport::Received request);
std::unique_ptr<transport::Body> EncodeHopResults(std::vector<engine::HopResult> results);
// `items` is the number of items asked; the answer must have one result per item, and counts
// adding up to its neighbours.
absl::StatusOr<std::vector<engine::HopResult>> DecodeHopResults(transport::Received answer,
                                                                size_t items);

struct GatherRequest {
  std::vector<engine::TypedIds> items;
  engine::FeatureDtype dtype = engine::FeatureDtype::kFloat32;
};
std::unique_ptr<transport::Body> EncodeGatherRequest(std::vector<engine::TypedIds> items,
                                                     engine::FeatureDtype dtype);
absl::StatusOr<GatherRequest> DecodeGatherRequest(transport::Received request);
std::unique_ptr<transport::Body> EncodeFeatureBlocks(std::vector<engine::FeatureBlock> blocks);
// `ids_per_item` are the id counts asked: every block must carry that many labels and
// rows of feat_dim values of `dtype`.
absl::StatusOr<std::vector<engine::FeatureBlock>> DecodeFeatureBlocks(
    transport::Received answer, const std::vector<size_t>& ids_per_item,
    engine::FeatureDtype dtype);

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_BULK_CODEC_H_
