#ifndef GRAPHSHARD_CLIENT_OPTIONS_H_
#define GRAPHSHARD_CLIENT_OPTIONS_H_

// Command line of graphshard-trainer, parsed once into a plain struct (no global flag state), so
// the parser is testable and the rest of the trainer takes its settings as one value; choices
// become enums (choices.h), the model a validated row name of the model registry
// (client/model_info.h). Which fields change results, and so enter a checkpoint's config
// fingerprint: config_fingerprint.h.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/choices.h"
#include "client/data_types.h"
#include "client/link_task.h"
#include "client/model_info.h"
#include "rpc/security.h"

namespace graphshard::client {

// The settings a task trains with unless the command line says otherwise: the values its
// end-to-end tests tuned and reach their results with (trainer/README.md, "Per-task defaults",
// says what each is and why). ParseTrainerOptions gives each of these flags that was not on the
// command line its task's value; a flag given always wins. Every other flag has one default
// for every task.
struct TaskDefaults {
  int hidden;                    // --hidden
  std::vector<int32_t> fanouts;  // --fanouts (empty: the task samples none, --task graph)
  int batch_size;                // --batch-size
  double lr;                     // --lr
  double weight_decay;           // --weight-decay
  double dropout;                // --dropout
  bool normalize_features;       // --normalize-features
};

// The row of `task` (a constant table; the reference stays valid).
const TaskDefaults& DefaultsFor(Task task);

struct TrainerOptions {
  // Server discovery: exactly one of these is set.
  std::string registry_dir;          // --registry DIR: DIR/part_<k> holds "host:port\n"
  std::vector<std::string> servers;  // --servers a:p,b:q (index = part; a:p+c:r = replicas)

  Task task = Task::kNode;     // --task node|graph|link (graph: TU datasets, GIN;
                               // link: link prediction, link_task.h)
  std::string model = "sage";  // --model: a RegisteredModels() name of the task
                               // (the task's first row by default)
  int layers = 3;              // --layers: GIN layers (--task graph)
  int epochs = 5;              // --epochs
  // The per-task flags start as node's row (TaskDefaults; the parser applies --task's).
  int hidden = DefaultsFor(Task::kNode).hidden;  // --hidden
  // --fanouts: one SAGE layer per hop, -1 = all
  std::vector<int32_t> fanouts = DefaultsFor(Task::kNode).fanouts;
  int batch_size = DefaultsFor(Task::kNode).batch_size;  // --batch-size
  double lr = DefaultsFor(Task::kNode).lr;               // --lr (Adam)
  // --weight-decay (Adam, L2 as torch.optim.Adam)
  double weight_decay = DefaultsFor(Task::kNode).weight_decay;
  uint64_t seed = 0;                                  // --seed
  double dropout = DefaultsFor(Task::kNode).dropout;  // --dropout
  bool replace = false;                               // --replace: sample with replacement
  bool temporal = false;                      // --temporal: neighbours at or before the seed's
                                              // time (PyG time_attr; docs/SERVER.md)
  bool temporal_strict = false;               // --temporal-strict: strictly before (implies
                                              // --temporal)
  std::string temporal_strategy = "uniform";  // --temporal-strategy uniform|last (PyG's)
  int eval_every = 1;                         // --eval-every: evaluate every N epochs (and at the
                                              // end); 0 = never (accuracies reported as 0)
  // --normalize-features: x / max(row sum, 1), as PyG's NormalizeFeatures on non-negative
  // features
  bool normalize_features = DefaultsFor(Task::kNode).normalize_features;
  int threads = 1;  // --threads: torch intra-op threads
  // --prefetch auto|K: minibatches received and converted ahead; 0 = auto (ResolvePrefetch)
  int prefetch = 0;
  // --reuse-rows: with a tiered store's remote rows on a GPU, a row that one of the last
  // prefetch batches holds is copied from it instead of fetched again
  bool reuse_rows = true;
  DeviceKind device = DeviceKind::kCpu;  // --device cpu|cuda (cuda:LOCAL_RANK)
  H2dMode h2d = H2dMode::kRegistered;    // --h2d registered|staged: how batches reach the GPU
  Backend backend = Backend::kAuto;      // --backend auto|gloo|nccl (auto: nccl on cuda)
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;  // --feature-dtype float32|float16|
                                                        // bfloat16 (transport)
  Trimming trim = Trimming::kOn;  // --trim on|off: per-layer trimming (sage, gcn)
  // --static-shapes on|off: training batches padded to fixed shapes, the GPU step a CUDA graph
  // (client/choices.h; trainer/static_shapes.h)
  StaticShapes static_shapes = StaticShapes::kOff;
  Aggregation aggregation = Aggregation::kFused;  // --aggregation fused|torch (choices.h)
  Sampler sampler = Sampler::kAuto;               // --sampler auto|server|gpu (choices.h)
  // --sampler-topology device|host (choices.h)
  SamplerTopology sampler_topology = SamplerTopology::kDevice;
  Precision precision = Precision::kAuto;     // --precision auto|fp32|tf32|bf16: matmuls
                                              // (model.h; ResolvePrecision)
  Assignment assignment = Assignment::kPart;  // --assignment part|spread (assignment.h)
  // --feature-store auto|server|device: rows with every batch, or every row loaded onto the
  // device once and gathered there (feature_store.h); auto: ResolveFeatureStore (choices.h)
  FeatureStoreKind feature_store = FeatureStoreKind::kAuto;
  // --device-cache-mib auto|N: the device tier of --feature-store device (feature_store.h); -1 =
  // auto (DeviceCacheBudget, choices.h).
  int64_t device_cache_mib = -1;
  // --device-tier auto|own|shared: one device tier per GPU, or one for a host's GPUs
  // (choices.h; trainer/feature_store.h).
  DeviceTier device_tier = DeviceTier::kAuto;
  HostTier host_tier = HostTier::kLocal;  // --host-tier local|none (choices.h)
  // --host-cache-mib auto|N: other hosts' hottest rows kept in host memory (feature_store.h);
  // -1 = auto (HostCacheBudget, choices.h).
  int64_t host_cache_mib = -1;
  RemoteRows remote_rows = RemoteRows::kHost;  // --remote-rows host|owner (choices.h)
  bool deterministic = false;                  // --deterministic: torch's deterministic kernels
                                               // (CUDA: bitwise-reproducible weights; slower)
  std::string checkpoint_dir;                  // --checkpoint-dir: where checkpoints go ("" = none)
  int64_t checkpoint_every = 0;                // --checkpoint-every N steps (0 = epoch ends only)
  bool resume = false;                         // --resume from checkpoint_dir's checkpoint
  std::string metrics_file;                    // --metrics-file: JSONL of every epoch (rank 0)
  std::string tensorboard_dir;                 // --tensorboard: event files per epoch (rank 0)
  double progress_every_s = 10;                // --progress-every-s: plain progress lines (no tty)
  int64_t stop_after_steps = 0;                // --stop-after-steps: exit 3 after that many steps
                                               // (tests: a crash at a known step)
  std::string profile_dir;                     // --profile-dir: 20 steps profiled per rank
                                               // (trainer/step_profiler.h)
  double rpc_timeout_s = 60;                   // --rpc-timeout-s: deadline of every RPC
  double server_wait_s = 60;          // --server-wait-s: how long to wait for servers' health
                                      // (at the start, and for a part whose stream broke)
  double stall_timeout_s = 30;        // --stall-timeout-s: no batch for this long = the
                                      // server is stalled (stream reopened elsewhere)
  double collective_timeout_s = 300;  // --collective-timeout-s: rendezvous and Gloo ops
  rpc::SecurityFlags security;        // --token-file, --tls-*: read at start-up
                                      // (rpc/security.h, docs/SECURITY.md)
  LinkOptions link{};                 // --task link's flags (link_task.h)
  // Full-graph inference (inference.h): --infer loads --checkpoint-dir's model and writes every
  // node's outputs to --out instead of training; --eval full evaluates that way while training.
  bool infer = false;                  // --infer
  std::string out_dir;                 // --out DIR (with --infer)
  EvalMode eval = EvalMode::kSampled;  // --eval sampled|full
};

// Parses argv[1..argc). Accepts "--name value" and "--name=value"; the per-task flags not given
// take --task's row of TaskDefaults (before anything reads them: the config fingerprint of a
// run, and so of its checkpoints, holds the values it trains with). InvalidArgument, naming the
// flag, for unknown flags, missing or malformed values, out-of-range numbers, neither or both of
// --registry/--servers, unknown models, devices, backends or dtypes, --resume without
// --checkpoint-dir, --infer without --checkpoint-dir or --out (or with --task graph), --out
// without --infer. NotFound-free: the registry is read later.
// A bare "--help" returns a Cancelled status carrying the usage text (caller prints, exits 0).
// --model must name a row of `models` (RegisteredModels(); the table must outlive the call)
// whose task is --task's.
absl::StatusOr<TrainerOptions> ParseTrainerOptions(int argc, const char* const* argv,
                                                   absl::Span<const ModelInfo> models);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_OPTIONS_H_
