#ifndef GRAPHSHARD_RPC_FEATURE_DTYPE_PROTO_H_
#define GRAPHSHARD_RPC_FEATURE_DTYPE_PROTO_H_

// common::FeatureDtype <-> graphshard.proto's v1::FeatureDtype, the one mapping the server and
// the trainer share. Thread-safe: pure functions.

#include "absl/status/statusor.h"
#include "common/feature_dtype.h"
#include "proto/graphshard.pb.h"

namespace graphshard::rpc {

// InvalidArgument naming the number for a value outside the enum (a newer or garbled peer);
// a receiver that must report bad data as DataLoss re-codes it.
absl::StatusOr<common::FeatureDtype> FeatureDtypeFromProto(v1::FeatureDtype dtype);

v1::FeatureDtype FeatureDtypeToProto(common::FeatureDtype dtype);

}  // namespace graphshard::rpc

#endif  // GRAPHSHARD_RPC_FEATURE_DTYPE_PROTO_H_
