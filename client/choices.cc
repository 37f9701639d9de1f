#include "client/choices.h"

#include <iterator>

#include "common/feature_dtype.h"

namespace graphshard::client {
namespace {

constexpr Choice<Task> kTasks[] = {
    {Task::kNode, "node"}, {Task::kGraph, "graph"}, {Task::kLink, "link"}};
constexpr Choice<DeviceKind> kDevices[] = {{DeviceKind::kCpu, "cpu"}, {DeviceKind::kCuda, "cuda"}};
constexpr Choice<H2dMode> kH2dModes[] = {{H2dMode::kRegistered, "registered"},
                                         {H2dMode::kStaged, "staged"}};
constexpr Choice<Backend> kBackends[] = {
    {Backend::kAuto, "auto"}, {Backend::kGloo, "gloo"}, {Backend::kNccl, "nccl"}};
constexpr Choice<Trimming> kTrimmings[] = {{Trimming::kOn, "on"}, {Trimming::kOff, "off"}};
constexpr Choice<Precision> kPrecisions[] = {{Precision::kAuto, "auto"},
                                             {Precision::kFp32, "fp32"},
                                             {Precision::kTf32, "tf32"},
                                             {Precision::kBf16, "bf16"}};
constexpr Choice<EvalMode> kEvalModes[] = {{EvalMode::kSampled, "sampled"},
                                           {EvalMode::kFull, "full"}};
constexpr Choice<Assignment> kAssignments[] = {{Assignment::kPart, "part"},
                                               {Assignment::kSpread, "spread"}};
constexpr Choice<FeatureStoreKind> kFeatureStores[] = {{FeatureStoreKind::kAuto, "auto"},
                                                       {FeatureStoreKind::kServer, "server"},
                                                       {FeatureStoreKind::kDevice, "device"}};
constexpr Choice<HostTier> kHostTiers[] = {{HostTier::kLocal, "local"}, {HostTier::kNone, "none"}};
constexpr Choice<DeviceTier> kDeviceTiers[] = {
    {DeviceTier::kAuto, "auto"}, {DeviceTier::kOwn, "own"}, {DeviceTier::kShared, "shared"}};
constexpr Choice<RemoteRows> kRemoteRows[] = {{RemoteRows::kHost, "host"},
                                              {RemoteRows::kOwner, "owner"}};
constexpr Choice<StaticShapes> kStaticShapes[] = {{StaticShapes::kOff, "off"},
                                                  {StaticShapes::kOn, "on"}};
constexpr Choice<Aggregation> kAggregation[] = {{Aggregation::kFused, "fused"},
                                                {Aggregation::kTorch, "torch"}};
constexpr Choice<Sampler> kSamplers[] = {{Sampler::kServer, "server"}, {Sampler::kGpu, "gpu"}};
// The names' one home is common/feature_dtype.h.
constexpr Choice<FeatureDtype> kDtypes[] = {
    {FeatureDtype::kFloat32, common::FeatureDtypeName(FeatureDtype::kFloat32)},
    {FeatureDtype::kFloat16, common::FeatureDtypeName(FeatureDtype::kFloat16)},
    {FeatureDtype::kBFloat16, common::FeatureDtypeName(FeatureDtype::kBFloat16)}};
static_assert(std::size(kDtypes) == std::size(common::kFeatureDtypes));

}  // namespace

template <>
absl::Span<const Choice<Task>> ChoicesOf<Task>() {
  return kTasks;
}
template <>
absl::Span<const Choice<DeviceKind>> ChoicesOf<DeviceKind>() {
  return kDevices;
}
template <>
absl::Span<const Choice<H2dMode>> ChoicesOf<H2dMode>() {
  return kH2dModes;
}
template <>
absl::Span<const Choice<Backend>> ChoicesOf<Backend>() {
  return kBackends;
}
template <>
absl::Span<const Choice<Trimming>> ChoicesOf<Trimming>() {
  return kTrimmings;
}
template <>
absl::Span<const Choice<Precision>> ChoicesOf<Precision>() {
  return kPrecisions;
}
template <>
absl::Span<const Choice<EvalMode>> ChoicesOf<EvalMode>() {
  return kEvalModes;
}
template <>
absl::Span<const Choice<Assignment>> ChoicesOf<Assignment>() {
  return kAssignments;
}
template <>
absl::Span<const Choice<FeatureStoreKind>> ChoicesOf<FeatureStoreKind>() {
  return kFeatureStores;
}
template <>
absl::Span<const Choice<StaticShapes>> ChoicesOf<StaticShapes>() {
  return kStaticShapes;
}
template <>
absl::Span<const Choice<Aggregation>> ChoicesOf<Aggregation>() {
  return kAggregation;
}
template <>
absl::Span<const Choice<Sampler>> ChoicesOf<Sampler>() {
  return kSamplers;
}
template <>
absl::Span<const Choice<HostTier>> ChoicesOf<HostTier>() {
  return kHostTiers;
}
template <>
absl::Span<const Choice<DeviceTier>> ChoicesOf<DeviceTier>() {
  return kDeviceTiers;
}
template <>
absl::Span<const Choice<RemoteRows>> ChoicesOf<RemoteRows>() {
  return kRemoteRows;
}
template <>
absl::Span<const Choice<FeatureDtype>> ChoicesOf<FeatureDtype>() {
  return kDtypes;
}

}  // namespace graphshard::client
