#ifndef GRAPHSHARD_CLIENT_CHOICES_H_
#define GRAPHSHARD_CLIENT_CHOICES_H_

// The trainer's enumerated settings and their command-line spellings: flags are parsed into
// these enums once (options.h), and the rest of the trainer compares enums, never names. The
// models are not an enum: they are the rows of the model registry (client/model_info.h; the
// table is trainer/model_registry.h), so that a new model is its file plus one row there. No Torch.
// Thread-safe: constant tables.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "client/data_types.h"

namespace graphshard::client {

enum class Task { kNode, kGraph, kLink };     // --task node|graph|link
enum class DeviceKind { kCpu, kCuda };        // --device cpu|cuda
enum class H2dMode { kRegistered, kStaged };  // --h2d registered|staged
enum class Backend { kAuto, kGloo, kNccl };   // --backend auto|gloo|nccl
enum class Trimming { kOn, kOff };            // --trim on|off
enum class EvalMode { kSampled, kFull };      // --eval sampled|full (full: inference.h)
// --precision auto|fp32|tf32|bf16; auto: tf32 on cuda, fp32 on cpu (ResolvePrecision).
enum class Precision { kAuto, kFp32, kTf32, kBf16 };
// --assignment part|spread: which of its host's parts a trainer reads (assignment.h).
enum class Assignment { kPart, kSpread };
// --feature-store auto|server|device: where a batch's feature rows come from (feature_store.h;
// auto: ResolveFeatureStore).
enum class FeatureStoreKind { kAuto, kServer, kDevice };
// --host-tier local|none: which rows outside the device cache the feature store keeps in the
// trainer's host memory (feature_store.h): the rows of the parts served on its own host, or none
// (every row outside the cache is fetched from its server by id, per batch).
enum class HostTier { kLocal, kNone };
// --device-tier auto|own|shared: whether each GPU holds its own device tier, or the GPUs of a
// host share one (trainer/feature_store.h): the table split by id over them, each GPU reading
// the others' rows over peer access (NVLink), no host or remote tier.
enum class DeviceTier { kAuto, kOwn, kShared };
// --remote-rows host|owner: where the tiered store's remote rows are asked.
enum class RemoteRows { kHost, kOwner };
// --static-shapes on|off: training batches padded to capacities that only grow, the GPU step
// replayed as a CUDA graph (trainer/static_shapes.h, trainer/graph_step.h). Off by default: on
// the GPU machine it is faster on one GPU (1.15x with the fused aggregation) but not on two,
// where the servers' batches bound the epoch (tests/bench/RESULTS.md, "One kernel for SAGE's
// mean").
enum class StaticShapes { kOff, kOn };
// --aggregation fused|torch: SAGE's mean aggregation on a GPU as one CUDA kernel each way
// (trainer/mean_aggregate_kernel.h; atomic adds, so torch's operators under --deterministic and
// on the CPU), or torch's index_select + index_add.
enum class Aggregation { kFused, kTorch };
// --sampler auto|server|gpu: who samples the training batches: the servers (their epoch
// streams), or the trainer on its GPU over the whole topology read from them
// (trainer/gpu_sampler.h: the same batches, drawn alike; homogeneous node tasks with the rows on
// the GPU). auto (the default): the GPU where it can take the run and the topology fits beside
// the device tier (ResolveAutoSampler), else the servers. Measured: 1 -> 2 GPUs 1.77-1.97x
// against 1.5x on the products-shaped graph, 1.92x against 1.05x at papers scale 1; one
// GPU 1.03-1.16x (products), 1.56x (papers 0.25), 0.98x (papers 1) of the servers' epoch
// (tests/bench/RESULTS.md).
enum class Sampler { kAuto, kServer, kGpu };
// --sampler-topology device|host: where the GPU sampler keeps the graph's topology: in GPU
// memory (the default), or its sources in page-locked host memory that its kernels read in
// place over PCIe (zero-copy, as DGL's UVA sampling and GraphLearn-for-PyTorch's ZERO_COPY mode
// do): ~490 MiB less GPU memory on the products-shaped graph. Not the default, and not chosen
// by --sampler auto: beside a 10% device tier, whose host rows cross PCIe too, its epoch was
// 1.06-1.20x the servers' sampling and 1.14x the topology on the GPU (1 x H200;
// tests/bench/RESULTS.md, "The topology in host memory").
enum class SamplerTopology { kDevice, kHost };
// --feature-dtype float32|float16|bfloat16: FeatureDtype (data_types.h).

template <typename E>
struct Choice {
  E value;
  absl::string_view name;
};

// The spellings of an enum's values, in declaration order. Defined for Task, DeviceKind,
// H2dMode, Backend, Trimming, Precision, EvalMode, Assignment, FeatureStoreKind, HostTier,
// DeviceTier, RemoteRows, StaticShapes, Aggregation, Sampler, SamplerTopology and FeatureDtype.
template <typename E>
absl::Span<const Choice<E>> ChoicesOf();
template <>
absl::Span<const Choice<Task>> ChoicesOf<Task>();
template <>
absl::Span<const Choice<DeviceKind>> ChoicesOf<DeviceKind>();
template <>
absl::Span<const Choice<H2dMode>> ChoicesOf<H2dMode>();
template <>
absl::Span<const Choice<Backend>> ChoicesOf<Backend>();
template <>
absl::Span<const Choice<Trimming>> ChoicesOf<Trimming>();
template <>
absl::Span<const Choice<Precision>> ChoicesOf<Precision>();
template <>
absl::Span<const Choice<EvalMode>> ChoicesOf<EvalMode>();
template <>
absl::Span<const Choice<Assignment>> ChoicesOf<Assignment>();
template <>
absl::Span<const Choice<FeatureStoreKind>> ChoicesOf<FeatureStoreKind>();
template <>
absl::Span<const Choice<HostTier>> ChoicesOf<HostTier>();
template <>
absl::Span<const Choice<DeviceTier>> ChoicesOf<DeviceTier>();
template <>
absl::Span<const Choice<RemoteRows>> ChoicesOf<RemoteRows>();
template <>
absl::Span<const Choice<StaticShapes>> ChoicesOf<StaticShapes>();
template <>
absl::Span<const Choice<Aggregation>> ChoicesOf<Aggregation>();
template <>
absl::Span<const Choice<Sampler>> ChoicesOf<Sampler>();
template <>
absl::Span<const Choice<SamplerTopology>> ChoicesOf<SamplerTopology>();
template <>
absl::Span<const Choice<FeatureDtype>> ChoicesOf<FeatureDtype>();

// Why a run cannot pad its batches, or "" when it can: only homogeneous node tasks are padded
// (link batches' supervision edges and heterogeneous batches' per-type hops are not).
inline std::string StaticShapesUnsupported(Task task, bool heterogeneous) {
  if (task != Task::kNode) return "it pads node-task batches only (--task node)";
  if (heterogeneous) return "it pads homogeneous graphs only (this graph has several node types)";
  return "";
}

// The precision a run computes in: `p`, or for kAuto tf32 on cuda and fp32 on the CPU (no TF32
// units there: the same as fp32). On the GPU machine, with trimming, tf32 and fp32 epochs were
// equal within noise and bf16's 20-30% slower (the casts cost more than the smaller matmuls
// save); untrimmed, tf32 was 1.5x fp32 and 1.2x bf16 (tests/bench/RESULTS.md, "The device feature
// store on the GPU machine"). TF32 keeps 10 mantissa bits, bf16 7, and bf16 kept Cora's test
// accuracy within 0.1 point of fp32 over 5 seeds (trainer/README.md, "Precision").
inline Precision ResolvePrecision(Precision p, DeviceKind device) {
  if (p != Precision::kAuto) return p;
  return device == DeviceKind::kCuda ? Precision::kTf32 : Precision::kFp32;
}

// What feature_store="auto" becomes for the Python loader, whose device store holds the whole
// table: `device` on a CUDA device for node and link tasks when the features (`feature_bytes`,
// every node type's rows in the feature dtype) take at most half of the device's free memory
// (`free_device_bytes`; nullopt where this build cannot tell), else `server`. An explicit
// choice is returned as it is.
inline FeatureStoreKind ResolveFeatureStore(FeatureStoreKind requested, Task task, bool cuda,
                                            int64_t feature_bytes,
                                            absl::optional<int64_t> free_device_bytes) {
  if (requested != FeatureStoreKind::kAuto) return requested;
  if (!cuda || task == Task::kGraph || feature_bytes <= 0 || !free_device_bytes) {
    return FeatureStoreKind::kServer;
  }
  return feature_bytes <= *free_device_bytes / 2 ? FeatureStoreKind::kDevice
                                                 : FeatureStoreKind::kServer;
}

// What the trainer's --feature-store auto becomes: `device` on a CUDA device for node and link
// tasks whose nodes have features (`feature_bytes` > 0), else `server`. The trainer's device
// store is tiered (trainer/feature_store.h): rows outside the device's cache stay in host memory
// or with their servers, so it never needs the whole table on the GPU. An explicit choice is
// returned as it is.
inline FeatureStoreKind ResolveTieredFeatureStore(FeatureStoreKind requested, Task task, bool cuda,
                                                  int64_t feature_bytes) {
  if (requested != FeatureStoreKind::kAuto) return requested;
  if (!cuda || task == Task::kGraph || feature_bytes <= 0) return FeatureStoreKind::kServer;
  return FeatureStoreKind::kDevice;
}

// The device tier's budget in bytes: --device-cache-mib when set (>= 0), else (auto) the whole
// table (`feature_bytes`) where it takes at most half of the device's free memory
// (`free_device_bytes`), else that half; the whole table where free memory is unknown (a CPU
// trainer, or a build that cannot tell).
inline int64_t DeviceCacheBudget(int64_t device_cache_mib, int64_t feature_bytes,
                                 absl::optional<int64_t> free_device_bytes) {
  if (device_cache_mib >= 0) {
    return device_cache_mib > (INT64_MAX >> 20) ? INT64_MAX : device_cache_mib << 20;
  }
  if (!free_device_bytes) return feature_bytes;
  return std::min(feature_bytes, std::max<int64_t>(0, *free_device_bytes / 2));
}

// Whether this trainer asks for the shared device tier (--device-tier; every rank's answer is
// then combined, trainer/train.cc: shared only where all ask): shared, on a GPU; auto, on a
// GPU with `trainers_on_host` >= 2, where the device tier's budget (`budget`, bytes) is below
// the table (`feature_bytes`) but holds a 1 / trainers_on_host share of it; own: never.
inline bool WantSharedDeviceTier(DeviceTier tier, bool cuda, int trainers_on_host,
                                 int64_t feature_bytes, int64_t budget) {
  if (tier == DeviceTier::kOwn || !cuda) return false;
  if (tier == DeviceTier::kShared) return true;
  if (trainers_on_host < 2 || budget >= feature_bytes) return false;
  return feature_bytes / trainers_on_host + (feature_bytes % trainers_on_host != 0) <= budget;
}

// The host cache's budget in bytes (--host-cache-mib: other hosts' hottest rows kept in host
// memory beside the host tier, trainer/feature_store.h): N MiB when set (>= 0); auto: none with
// --host-tier none (asked for less host memory), else a quarter of the host's available memory
// (`available_host_bytes`) shared by the trainers of the host (`trainers_on_host`), none when
// it is unknown. The store takes at most the rows there are to cache (none on one host).
inline int64_t HostCacheBudget(int64_t host_cache_mib, HostTier host_tier,
                               absl::optional<int64_t> available_host_bytes, int trainers_on_host) {
  if (host_cache_mib >= 0) {
    return host_cache_mib > (INT64_MAX >> 20) ? INT64_MAX : host_cache_mib << 20;
  }
  if (host_tier == HostTier::kNone || !available_host_bytes) return 0;
  return std::max<int64_t>(0, *available_host_bytes / 4 / std::max(trainers_on_host, 1));
}

// What --sampler auto becomes where the GPU sampler can take the run (a CUDA trainer, a
// homogeneous node task without --temporal, its rows on the GPU, a build with the sampler's
// kernels: the trainer checks those, trainer/train.cc), and why, for the log:
// - server for a graph of 2^31 nodes or more (int32 ids), or unknown free GPU memory;
// - else gpu when the topology (TopologyDeviceBytes; ~1.25x it in host memory while it is read:
//   16.7 GB peak RSS for 13.8 GB at papers scale 1) takes at most half of the GPU memory left
//   beside the device tier (the other half stays for training) and the host's trainers' reads
//   at most half of its available memory (not checked where unknown);
// - that holds whether the device tier holds every row or only part of them (a capped or auto
//   budget, the rest in the host and remote tiers): the sampler takes only memory the tier left
//   free. Measured (tests/bench/RESULTS.md, "The tiered store sampled on the GPU"; 1 x H200):
//   products-shaped, five rounds over two calls, the 25% tier's epoch 0.524 s sampled on the
//   GPU against 0.610 s by the servers, 10% 0.581 against 0.649 s (three rounds), for +610 MiB of
//   GPU memory; the papers-shaped graph at scale 0.25, where the host tier's reads bound the
//   epoch, 3.79 against 3.80 s with no server CPU per batch against 52 ms, for +3.7 GiB. --sampler
//   server keeps that memory free.
// With the topology in host memory (--sampler-topology host) the GPU holds only its offsets and
// the sampler's relabelling tables (SamplerTableBytes), and that is what must fit in the half.
struct AutoSamplerInputs {
  int64_t num_nodes = 0;  // the whole graph's
  int64_t num_edges = 0;
  absl::optional<int64_t> free_device_bytes = absl::nullopt;  // before the store loads
  int64_t device_tier_bytes = 0;                        // what the store will hold on this GPU
  SamplerTopology topology = SamplerTopology::kDevice;  // --sampler-topology
  absl::optional<int64_t> available_host_bytes = absl::nullopt;
  int trainers_on_host = 1;
};
struct SamplerChoice {
  Sampler sampler = Sampler::kServer;
  std::string why;
};
// GPU memory of the topology on the device (int64 offsets, int32 sources), and of the
// sampler's relabelling tables (two int32 per node, for each of its two lanes).
int64_t TopologyDeviceBytes(int64_t num_nodes, int64_t num_edges);
int64_t SamplerTableBytes(int64_t num_nodes);
SamplerChoice ResolveAutoSampler(const AutoSamplerInputs& in);

// --prefetch auto|K: steps the trainer's input pipeline keeps ready ahead (trainer/
// input_pipeline.h). K as given; auto (0): kGpuSampledPrefetch for a pass whose batches the
// trainer samples on its GPU (a batch is a few kernels away, and each one held ahead holds its
// gathered rows in GPU memory: ~125 MiB on the products-shaped graph), else kServerPrefetch (the
// servers' batches cross a stream and wait on their CPUs). Measured on the products-shaped graph,
// 1 GPU, GPU-sampled: 2 ahead against 4, the same epoch time, 245-250 MiB less peak GPU memory
// (tests/bench/RESULTS.md, "Fewer batches ahead where the GPU samples").
inline constexpr int kServerPrefetch = 4;
inline constexpr int kGpuSampledPrefetch = 2;
// The most --prefetch takes: a stream asks its server for a ring of prefetch + 4 + read-ahead
// batches, and servers allow 1024 (server/partition_service_stream.cc); past it the run would
// stop at its first stream with the server's error instead of the flag's.
inline constexpr int kMaxPrefetch = 1000;
int ResolvePrefetch(int prefetch, bool gpu_sampled);

template <typename E>
absl::string_view NameOf(E value) {
  for (const Choice<E>& c : ChoicesOf<E>()) {
    if (c.value == value) return c.name;
  }
  return "?";
}

template <typename E>
absl::optional<E> FromName(absl::string_view name) {
  for (const Choice<E>& c : ChoicesOf<E>()) {
    if (c.name == name) return c.value;
  }
  return absl::nullopt;
}

template <typename E>
std::vector<std::string> NamesOf() {
  std::vector<std::string> names;
  for (const Choice<E>& c : ChoicesOf<E>()) names.emplace_back(c.name);
  return names;
}

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_CHOICES_H_
