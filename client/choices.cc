#include "client/choices.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "absl/strings/str_format.h"
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
constexpr Choice<Sampler> kSamplers[] = {
    {Sampler::kAuto, "auto"}, {Sampler::kServer, "server"}, {Sampler::kGpu, "gpu"}};
constexpr Choice<SamplerTopology> kSamplerTopologies[] = {{SamplerTopology::kDevice, "device"},
                                                          {SamplerTopology::kHost, "host"}};
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
absl::Span<const Choice<SamplerTopology>> ChoicesOf<SamplerTopology>() {
  return kSamplerTopologies;
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

int64_t TopologyDeviceBytes(int64_t num_nodes, int64_t num_edges) {
  // int64 offsets [num_nodes + 1] and int32 sources [num_edges] (trainer/gpu_sampler.h),
  // saturating: a count past what int64 bytes hold is "too large" all the same.
  const int64_t n = std::max<int64_t>(num_nodes, 0), e = std::max<int64_t>(num_edges, 0);
  if (n >= INT64_MAX / 16 || e >= INT64_MAX / 8) return INT64_MAX;
  return 8 * (n + 1) + 4 * e;
}

int64_t SamplerTableBytes(int64_t num_nodes) {
  const int64_t n = std::max<int64_t>(num_nodes, 0);
  return n >= INT64_MAX / 16 ? INT64_MAX : 16 * n;
}

int ResolvePrefetch(int prefetch, bool gpu_sampled) {
  if (prefetch > 0) return prefetch;
  return gpu_sampled ? kGpuSampledPrefetch : kServerPrefetch;
}

SamplerChoice ResolveAutoSampler(const AutoSamplerInputs& in) {
  const auto mib = [](int64_t b) { return static_cast<double>(b) / (1 << 20); };
  if (in.num_nodes >= INT32_MAX) {
    return {Sampler::kServer,
            absl::StrFormat("%d nodes: the GPU sampler's ids are int32", in.num_nodes)};
  }
  if (!in.free_device_bytes) {
    return {Sampler::kServer, "this build cannot tell the GPU's free memory"};
  }
  const bool on_host = in.topology == SamplerTopology::kHost;
  const int64_t topology = TopologyDeviceBytes(in.num_nodes, in.num_edges);
  // On the host, the GPU keeps the offsets (8 bytes a node) and the tables.
  const int64_t on_gpu =
      on_host ? SamplerTableBytes(in.num_nodes) + TopologyDeviceBytes(in.num_nodes, 0) : topology;
  const int64_t beside = std::max<int64_t>(0, *in.free_device_bytes - in.device_tier_bytes);
  if (on_gpu > beside / 2) {
    return {Sampler::kServer,
            absl::StrFormat("the GPU would hold %.0f MiB for the %s, more than half of the "
                            "%.0f MiB of GPU memory free beside the device tier",
                            mib(on_gpu), on_host ? "offsets and the sampler's tables" : "topology",
                            mib(beside))};
  }
  const int64_t readers = std::max(in.trainers_on_host, 1);
  const double host_need = 1.25 * static_cast<double>(topology) * static_cast<double>(readers);
  if (in.available_host_bytes && host_need > static_cast<double>(*in.available_host_bytes) / 2) {
    return {Sampler::kServer,
            absl::StrFormat("reading the topology takes ~%.0f MiB of host memory for %d "
                            "trainer(s) of this host, more than half of the %.0f MiB available",
                            host_need / (1 << 20), readers, mib(*in.available_host_bytes))};
  }
  if (on_host) {
    return {
        Sampler::kGpu,
        absl::StrFormat("the topology, %.0f MiB, in page-locked host memory (--sampler-topology "
                        "host); its offsets and tables, %.0f MiB, fit in the "
                        "%.0f MiB of GPU memory free beside the tier",
                        mib(topology), mib(on_gpu), mib(beside))};
  }
  return {Sampler::kGpu,
          absl::StrFormat("the topology, %.0f MiB, fits in the %.0f MiB free beside the device "
                          "tier",
                          mib(topology), mib(beside))};
}

}  // namespace graphshard::client
