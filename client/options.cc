#include "client/options.h"

#include <array>
#include <cassert>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "common/flags.h"
#include "common/registry.h"
#include "common/status_macros.h"

namespace graphshard::client {
namespace {

// A custom flag's error: FlagSet reports it as "--flag=value: expected <what>".
absl::Status Expected(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("expected ", what));
}

// An "auto|N" MiB flag's parser: auto = -1, else a whole number >= 0.
std::function<absl::Status(absl::string_view)> AutoOrMib(int64_t* out) {
  return [out](absl::string_view v) -> absl::Status {
    if (v == "auto") {
      *out = -1;
      return absl::OkStatus();
    }
    int64_t mib = 0;
    if (!absl::SimpleAtoi(v, &mib) || mib < 0) {
      return Expected("auto or a whole number of MiB >= 0");
    }
    *out = mib;
    return absl::OkStatus();
  };
}

// auto -> 0, else a whole number in [1, max].
std::function<absl::Status(absl::string_view)> AutoOrPositive(int* out, int max) {
  return [out, max](absl::string_view v) -> absl::Status {
    if (v == "auto") {
      *out = 0;
      return absl::OkStatus();
    }
    int n = 0;
    if (!absl::SimpleAtoi(v, &n) || n < 1 || n > max) {
      return Expected(absl::StrCat("auto or a whole number from 1 to ", max));
    }
    *out = n;
    return absl::OkStatus();
  };
}

absl::Status ParseFanouts(absl::string_view value, std::vector<int32_t>* out) {
  std::vector<int32_t> fanouts;
  for (absl::string_view part : absl::StrSplit(value, ',')) {
    int32_t f = 0;
    if (!absl::SimpleAtoi(part, &f) || (f < 1 && f != -1)) {
      return Expected("a comma-separated list of positive integers or -1");
    }
    fanouts.push_back(f);
  }
  if (fanouts.empty()) return Expected("at least one hop");
  *out = std::move(fanouts);
  return absl::OkStatus();
}

// Every task's row (--help lists them in this order); trainer/README.md, "Per-task defaults", says
// why each value. Node: Cora's node test (GraphSAGE, PyG's weight decay of its Cora examples).
// Link: Cora's link test (a wider encoder, both hops of 10, normalised inputs: test AUC 0.85
// with node's settings, over 0.90 with these), with dropout 0.3 where the test had 0, which
// held AUC 0.91 to epoch 50 where 0 fell back to 0.88. Graph: the TU test's GIN.
struct TaskRow {
  Task task;
  TaskDefaults defaults;
};
const std::array<TaskRow, 3>& TaskRows() {
  static const auto* const rows = new std::array<TaskRow, 3>{{
      {Task::kNode,
       {.hidden = 64,
        .fanouts = {10, 5},
        .batch_size = 256,
        .lr = 0.01,
        .weight_decay = 5e-4,
        .dropout = 0.5,
        .normalize_features = false}},
      {Task::kLink,
       {.hidden = 128,
        .fanouts = {10, 10},
        .batch_size = 128,
        .lr = 0.01,
        .weight_decay = 0,
        .dropout = 0.3,
        .normalize_features = true}},
      {Task::kGraph,
       {.hidden = 32,
        .fanouts = {},
        .batch_size = 32,
        .lr = 0.01,
        .weight_decay = 0,
        .dropout = 0.2,
        .normalize_features = false}},
  }};
  return *rows;
}

// What --help shows as a per-task flag's default: "node 64; link 128; graph 32" (a task
// without the setting is left out).
std::string PerTaskDefaultText(const std::function<std::string(const TaskDefaults&)>& text) {
  std::vector<std::string> parts;
  for (const TaskRow& row : TaskRows()) {
    const std::string value = text(row.defaults);
    if (!value.empty()) parts.push_back(absl::StrCat(NameOf(row.task), " ", value));
  }
  return absl::StrJoin(parts, "; ");
}

void ShowPerTaskDefaults(common::FlagSet& flags) {
  const auto number = [](auto v) { return absl::StrCat(v); };
  const auto boolean = [](bool v) { return std::string(v ? "true" : "false"); };
  flags.SetDefaultText("hidden", PerTaskDefaultText([&](auto& d) { return number(d.hidden); }));
  flags.SetDefaultText("fanouts", PerTaskDefaultText([](const TaskDefaults& d) {
                         return absl::StrJoin(d.fanouts, ",");
                       }));
  flags.SetDefaultText("batch-size",
                       PerTaskDefaultText([&](auto& d) { return number(d.batch_size); }));
  flags.SetDefaultText("lr", PerTaskDefaultText([&](auto& d) { return number(d.lr); }));
  flags.SetDefaultText("weight-decay",
                       PerTaskDefaultText([&](auto& d) { return number(d.weight_decay); }));
  flags.SetDefaultText("dropout", PerTaskDefaultText([&](auto& d) { return number(d.dropout); }));
  flags.SetDefaultText("normalize-features",
                       PerTaskDefaultText([&](auto& d) { return boolean(d.normalize_features); }));
}

// Gives every per-task flag that the command line did not set --task's value.
void ApplyTaskDefaults(const common::FlagSet& flags, TrainerOptions& o) {
  const TaskDefaults& d = DefaultsFor(o.task);
  if (!flags.IsSet("hidden")) o.hidden = d.hidden;
  if (!flags.IsSet("fanouts") && !d.fanouts.empty()) o.fanouts = d.fanouts;
  if (!flags.IsSet("batch-size")) o.batch_size = d.batch_size;
  if (!flags.IsSet("lr")) o.lr = d.lr;
  if (!flags.IsSet("weight-decay")) o.weight_decay = d.weight_decay;
  if (!flags.IsSet("dropout")) o.dropout = d.dropout;
  if (!flags.IsSet("normalize-features")) o.normalize_features = d.normalize_features;
}

// --name: one of E's spellings (choices.h), as FlagSet::AddChoice shows and checks them.
template <typename E>
void AddEnum(common::FlagSet& flags, std::string name, E* target, std::string help) {
  std::vector<std::string> names = NamesOf<E>();
  std::string value_name = absl::StrJoin(names, "|");
  flags.AddCustom(std::move(name), std::move(value_name), std::move(help),
                  std::string(NameOf(*target)),
                  [target, names = std::move(names)](absl::string_view text) {
                    if (absl::optional<E> value = FromName<E>(text)) {
                      *target = *value;
                      return absl::OkStatus();
                    }
                    return Expected(absl::StrCat("one of ", absl::StrJoin(names, ", ")));
                  });
}

constexpr char kSynopsis[] =
    "usage: graphshard-trainer (--registry DIR | --servers HOST:PORT,...) [flags]";
constexpr char kEpilogue[] =
    "Defaults \"node X; link Y; graph Z\" depend on --task: each is the setting that task's\n"
    "tests tuned (trainer/README.md); a flag given on the command line always wins.\n"
    "Rendezvous: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, or SLURM_PROCID,\n"
    "SLURM_NTASKS, SLURM_LOCALID; default a single process.\n";

// Binds every flag of graphshard-trainer to its field of `o`. Usage() shows `o`'s values as
// the defaults.
void RegisterFlags(common::FlagSet& flags, TrainerOptions& o, absl::Span<const ModelInfo> models) {
  const common::NumberRange at_least_0{.min = 0};
  const common::NumberRange at_least_1{.min = 1};
  const common::NumberRange positive{.min = 0, .min_exclusive = true};
  flags.AddString("registry", &o.registry_dir, "DIR",
                  "registry folder: DIR/part_<k> holds server k's host:port", false);
  flags.AddCustom("servers", "HOST:PORT,...",
                  "explicit server addresses (index = part; a:1+b:1 = replicas)", "",
                  [&o](absl::string_view v) -> absl::Status {
                    ASSIGN_OR_RETURN(o.servers, common::ParseAddressList(v));
                    return absl::OkStatus();
                  });
  AddEnum(flags, "task", &o.task,
          "node classification, or graph classification on a partitioned TU\n"
          "dataset (whole graphs per batch, GIN, sum pooling), or link prediction\n"
          "(SAGE encoder, dot-product decoder; needs partition --edge-split)");
  std::vector<std::string> model_names;
  for (const ModelInfo& m : models) model_names.emplace_back(m.name);
  flags.AddCustom("model", absl::StrJoin(model_names, "|"),
                  "sage: GraphSAGE (heterogeneous on a heterogeneous graph); gcn;\n"
                  "gin for --task graph (its default there)",
                  o.model, [&o, models, model_names](absl::string_view text) {
                    if (FindModel(models, text) == nullptr) {
                      return Expected(absl::StrCat("one of ", absl::StrJoin(model_names, ", ")));
                    }
                    o.model = std::string(text);
                    return absl::OkStatus();
                  });
  flags.AddInt("layers", &o.layers, "N",
               "GIN layers (--task graph); node tasks: one layer per fanout", at_least_1);
  flags.AddInt("epochs", &o.epochs, "N", "training epochs", at_least_1);
  flags.AddInt("hidden", &o.hidden, "H", "hidden channels", at_least_1);
  flags.AddCustom("fanouts", "F1,F2,...", "neighbours per hop, -1 = all; one SAGE layer per hop",
                  absl::StrJoin(o.fanouts, ","),
                  [&o](absl::string_view v) { return ParseFanouts(v, &o.fanouts); });
  flags.AddInt("batch-size", &o.batch_size, "B", "seeds per minibatch", at_least_1);
  flags.AddDouble("lr", &o.lr, "X", "Adam learning rate", positive);
  flags.AddDouble("weight-decay", &o.weight_decay, "X", "Adam weight decay", at_least_0);
  flags.AddUint64("seed", &o.seed, "S", "seed of initialisation, shuffling and sampling");
  flags.AddDouble("dropout", &o.dropout, "P", "dropout between layers",
                  {.min = 0, .max = 1, .max_exclusive = true});
  flags.AddBool("replace", &o.replace, "sample neighbours with replacement");
  flags.AddBool("temporal", &o.temporal,
                "temporal sampling (PyG's time_attr): a seed at time t (its node time)\n"
                "samples only in-edges of time <= t; sampled nodes keep the seed's time\n"
                "(disjoint trees). Needs a partition with times (edge_time.npy)");
  flags.AddBool("temporal-strict", &o.temporal_strict,
                "temporal sampling with in-edges of time < t only (implies --temporal)");
  flags.AddChoice("temporal-strategy", &o.temporal_strategy, {"uniform", "last"},
                  "temporal: draw uniformly among the eligible in-edges, or take the\n"
                  "fanout most recent ones (PyG's temporal_strategy)");
  flags.AddInt("eval-every", &o.eval_every, "N",
               "evaluate val/test every N epochs and at the end; 0 = never", at_least_0);
  flags.AddBool("normalize-features", &o.normalize_features,
                "divide each input row by max(row sum, 1)");
  flags.AddInt("threads", &o.threads, "T", "torch intra-op threads", at_least_1);
  flags.AddCustom("prefetch", "auto|K",
                  "minibatches received and converted ahead; auto = 2 where this trainer\n"
                  "samples on its GPU (--sampler), else 4; at most 1000",
                  "auto", AutoOrPositive(&o.prefetch, kMaxPrefetch));
  flags.AddBool("reuse-rows", &o.reuse_rows,
                "GPU, --feature-store device with remote rows: a row one of the last\n"
                "--prefetch batches gathered is copied from it on the GPU instead of\n"
                "fetched again (the host tier's rows too); keeps up to --prefetch\n"
                "batches' rows on the GPU. --no-reuse-rows: fetch every time");
  AddEnum(flags, "device", &o.device, "where the model runs; cuda uses cuda:LOCAL_RANK");
  AddEnum(flags, "h2d", &o.h2d,
          "cuda: the shared-memory ring segments are registered with CUDA once\n"
          "and the GPU copies batches straight out of them; or batches are\n"
          "copied into pinned buffers (intra-op threads), then to the GPU.\n"
          "Batches not in a registered segment are staged");
  AddEnum(flags, "backend", &o.backend, "gradient all-reduce; auto = nccl on cuda, gloo on cpu");
  AddEnum(flags, "feature-dtype", &o.feature_dtype, "feature transport");
  AddEnum(flags, "trim", &o.trim,
          "per-layer trimming (sage, gcn): layer l of L computes only the nodes\n"
          "within L-l-1 hops of the seeds, over the edges into them (PyG's\n"
          "trim_to_layer); off: every layer over the whole batch");
  AddEnum(flags, "static-shapes", &o.static_shapes,
          "training batches padded to capacities that only grow (each hop's\n"
          "nodes and edges; padding never reaches a real node) so that on cuda\n"
          "the step's forward and backward pass are captured once as a CUDA\n"
          "graph and replayed (homogeneous node tasks)");
  AddEnum(flags, "aggregation", &o.aggregation,
          "sage's mean aggregation on cuda: fused = one CUDA kernel each way\n"
          "(atomic adds; torch's operators under --deterministic); torch =\n"
          "index_select + index_add");
  AddEnum(flags, "sampler", &o.sampler,
          "who samples the training batches: server = the partition servers;\n"
          "gpu = this trainer on its GPU, over the graph's whole topology read\n"
          "from the servers at start (the same batches; homogeneous node tasks,\n"
          "--device cuda, rows on the GPU: --feature-store device); auto = gpu\n"
          "where it applies and the topology takes at most half of the GPU\n"
          "memory left beside the feature rows, else server (the log says which)");
  AddEnum(flags, "sampler-topology", &o.sampler_topology,
          "where the GPU sampler keeps the topology: device = GPU memory;\n"
          "host = its sources in page-locked host memory, read by the kernels\n"
          "over PCIe (zero-copy: 4 bytes per edge less GPU memory; slower\n"
          "where feature rows cross PCIe too)");
  AddEnum(flags, "precision", &o.precision,
          "matmuls: fp32; tf32 (cuda: TF32 tensor cores; cpu: same as fp32);\n"
          "bf16 (inputs rounded to bfloat16 as autocast does; weights, sums,\n"
          "GCN normalisation, loss and Adam state stay float32); auto: tf32 on\n"
          "cuda, fp32 on cpu");
  AddEnum(flags, "assignment", &o.assignment,
          "which of its host's parts a trainer reads: part = trainer i of a host\n"
          "reads part i mod P (a part's trainers split its seeds); spread = every\n"
          "trainer reads every part of its host, 1/T of each part's seeds (more\n"
          "streams per server, each trainer fed by every server)");
  AddEnum(flags, "feature-store", &o.feature_store,
          "server = every batch carries its feature rows; device = the servers\n"
          "send ids only and the trainer gathers the rows from its tiered store:\n"
          "the hottest rows on its device (--device-cache-mib), the rest of its\n"
          "host's parts in host memory (--host-tier), other hosts' rows fetched\n"
          "by id per batch; auto = device on cuda (node and link tasks), else\n"
          "server");
  flags.AddCustom("device-cache-mib", "auto|N",
                  "--feature-store device: MiB the device tier takes on the device: the\n"
                  "rows the first epoch's batches visit most and, unless every row fits,\n"
                  "its map (4 bytes a node); auto = every row where they take at most\n"
                  "half of the device's free memory, else that half",
                  "auto", AutoOrMib(&o.device_cache_mib));
  AddEnum(flags, "device-tier", &o.device_tier,
          "--feature-store device on GPUs: shared = the GPUs of a host hold one\n"
          "device tier together, each 1/G of every type's rows by id, reading\n"
          "the others' over peer access (NVLink; every GPU of the host must\n"
          "reach the others); own = each GPU its own tier; auto = shared where\n"
          "the table is over one GPU's --device-cache-mib but a 1/G share fits");
  AddEnum(flags, "host-tier", &o.host_tier,
          "--feature-store device: local = rows outside the device cache of the\n"
          "parts served on this host are kept in host memory (read by the GPU\n"
          "in place); none = every row outside the cache is fetched from its\n"
          "server by id per batch (less host memory)");
  flags.AddCustom("host-cache-mib", "auto|N",
                  "--feature-store device: MiB of other hosts' rows also kept in host\n"
                  "memory (read by the GPU in place, as the host tier): the hottest\n"
                  "after the device tier's, fetched once at the start; auto = a quarter\n"
                  "of the host's available memory shared by its trainers (none with\n"
                  "--host-tier none); 0 = every other host's row fetched per batch",
                  "auto", AutoOrMib(&o.host_cache_mib));
  AddEnum(flags, "remote-rows", &o.remote_rows,
          "--feature-store device: host = rows outside the device and host tiers\n"
          "are asked of this host's servers, which fetch other hosts' rows over\n"
          "their data plane through their hot-row caches (shared by the host's\n"
          "trainers); owner = asked of the servers that own them, directly");
  flags.AddBool("deterministic", &o.deterministic,
                "deterministic kernels only (torch.use_deterministic_algorithms;\n"
                "cuda: sorted index_add instead of atomics, a fixed cuBLAS workspace):\n"
                "the same run gives bitwise the same weights; slower on cuda");
  flags.AddString("checkpoint-dir", &o.checkpoint_dir, "DIR",
                  "write checkpoints here (atomic), at epoch ends and every N steps", false);
  flags.AddInt64("checkpoint-every", &o.checkpoint_every, "N",
                 "also every N training steps (0 = epoch ends only)", at_least_0);
  flags.AddBool("resume", &o.resume,
                "continue from DIR's checkpoint (the exact step), if there is one");
  flags.AddString("metrics-file", &o.metrics_file, "PATH",
                  "JSONL: one record per epoch and the summary (rank 0)", false);
  flags.AddString("tensorboard", &o.tensorboard_dir, "DIR",
                  "TensorBoard event file here: loss, accuracies, seeds/s, data wait per epoch "
                  "(rank 0)",
                  false);
  flags.AddDouble("progress-every-s", &o.progress_every_s, "S",
                  "progress line interval when stderr is not a terminal", positive);
  flags.AddInt64("stop-after-steps", &o.stop_after_steps, "N",
                 "stop with exit status 3 after N steps of this run (crash tests; 0 = never)",
                 at_least_1);
  flags.AddString("profile-dir", &o.profile_dir, "DIR",
                  "profile 20 steps of the second epoch (LibTorch's profiler): per rank, a\n"
                  "summary (profile_rank<k>.json: GPU busy and NCCL time per step, the step's\n"
                  "phases, the costliest kernels) and a Chrome trace where LibTorch has Kineto",
                  false);
  flags.AddDouble("rpc-timeout-s", &o.rpc_timeout_s, "S", "deadline of every RPC", positive);
  flags.AddDouble("server-wait-s", &o.server_wait_s, "S",
                  "wait this long for servers to report SERVING (at the start, and for a\n"
                  "server of a part whose stream broke)",
                  at_least_0);
  flags.AddDouble("stall-timeout-s", &o.stall_timeout_s, "S",
                  "a server that sends no batch for S seconds while one is awaited is\n"
                  "stalled: its stream is reopened on a live server of the part",
                  positive);
  flags.AddDouble("collective-timeout-s", &o.collective_timeout_s, "S",
                  "rendezvous and Gloo collective timeout", positive);
  rpc::AddSecurityFlags(flags, &o.security);
  RegisterLinkFlags(flags, o.link);
  flags.AddBool("infer", &o.infer,
                "full-graph inference instead of training: load --checkpoint-dir's model,\n"
                "compute every node's outputs layer by layer, write them to --out");
  flags.AddString("out", &o.out_dir, "DIR",
                  "--infer: per-part .npy files (orig_id, logits, predictions, embeddings)", false);
  AddEnum(flags, "eval", &o.eval,
          "sampled: val/test seeds over sampled neighbourhoods (training fanouts);\n"
          "full: full-graph inference (exact full-neighbourhood accuracy)");
  ShowPerTaskDefaults(flags);
}

// --model: given, or --task's first registered model; InvalidArgument unless it is registered
// and trains --task.
absl::Status ResolveModel(const common::FlagSet& flags, absl::Span<const ModelInfo> models,
                          TrainerOptions& o) {
  // Link prediction encodes nodes with a node-task model (its sage row).
  const Task model_task = o.task == Task::kLink ? Task::kNode : o.task;
  if (!flags.IsSet("model")) {  // the task's first registered model
    const ModelInfo* first = nullptr;
    for (const ModelInfo& m : models) {
      if (m.task == model_task && first == nullptr) first = &m;
    }
    if (first == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("no model is registered for --task ", NameOf(o.task)));
    }
    o.model = std::string(first->name);
  }
  const ModelInfo* model = FindModel(models, o.model);
  if (model == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--model ", o.model, ": not registered"));
  }
  if (o.task == Task::kLink && o.model != "sage") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--task link trains --model sage (GraphSAGE encoder, dot-product decoder), not --model ",
        o.model));
  }
  if (model->task != model_task) {
    if (o.task == Task::kGraph) {
      return absl::InvalidArgumentError(
          absl::StrCat("--task graph trains --model gin, not --model ", o.model));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--model ", o.model, " is for graph classification: add --task graph"));
  }
  return absl::OkStatus();
}

}  // namespace

const TaskDefaults& DefaultsFor(Task task) {
  for (const TaskRow& row : TaskRows()) {
    if (row.task == task) return row.defaults;
  }
  assert(false && "a Task without a row of defaults");
  return TaskRows()[0].defaults;
}

absl::StatusOr<TrainerOptions> ParseTrainerOptions(int argc, const char* const* argv,
                                                   absl::Span<const ModelInfo> models) {
  TrainerOptions o;
  common::FlagSet flags(kSynopsis, {}, kEpilogue);
  RegisterFlags(flags, o, models);
  ASSIGN_OR_RETURN(common::ParsedArgs parsed, flags.Parse(argc, argv));
  if (parsed.help) return absl::CancelledError(flags.Usage());
  ApplyTaskDefaults(flags, o);
  RETURN_IF_ERROR(ResolveModel(flags, models, o));
  const bool have_layers = flags.IsSet("layers");
  const bool have_fanouts = flags.IsSet("fanouts");
  const bool have_registry = flags.IsSet("registry");
  const bool have_servers = flags.IsSet("servers");
  if (o.task == Task::kGraph) {
    if (have_fanouts) {
      return absl::InvalidArgumentError(
          "--fanouts does not apply to --task graph: batches hold whole graphs (use --layers)");
    }
  } else {
    if (have_layers && o.layers != std::ssize(o.fanouts)) {
      return absl::InvalidArgumentError(absl::StrCat("--layers ", o.layers,
                                                     ": node tasks have one layer per fanout (",
                                                     o.fanouts.size(), " in --fanouts)"));
    }
  }
  if (o.temporal_strict) o.temporal = true;
  if (flags.IsSet("temporal-strategy") && !o.temporal) {
    return absl::InvalidArgumentError("--temporal-strategy needs --temporal");
  }
  if (o.feature_store == FeatureStoreKind::kDevice && o.task == Task::kGraph) {
    return absl::InvalidArgumentError(
        "--feature-store device is for node and link tasks (graph batches carry whole graphs)");
  }
  for (const char* tier_flag :
       {"device-cache-mib", "device-tier", "host-tier", "host-cache-mib", "remote-rows"}) {
    if (flags.IsSet(tier_flag) &&
        (o.feature_store == FeatureStoreKind::kServer || o.task == Task::kGraph)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", tier_flag,
                       " sets the tiered feature store: it needs --feature-store device or auto "
                       "and a node or link task"));
    }
  }
  if (o.static_shapes == StaticShapes::kOn && o.task != Task::kNode) {
    return absl::InvalidArgumentError(
        absl::StrCat("--static-shapes on: ", StaticShapesUnsupported(o.task, false)));
  }
  if (o.sampler_topology != SamplerTopology::kDevice &&
      (o.sampler == Sampler::kServer || o.device != DeviceKind::kCuda)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--sampler-topology ", NameOf(o.sampler_topology),
        " is where the GPU sampler keeps the topology; this run has none (",
        o.sampler == Sampler::kServer ? "--sampler server" : "not --device cuda", ")"));
  }
  if (o.sampler == Sampler::kGpu) {
    const char* why = o.task != Task::kNode           ? "node tasks (--task node)"
                      : o.device != DeviceKind::kCuda ? "a GPU (--device cuda)"
                      : o.temporal                    ? "sampling without --temporal"
                      : o.feature_store == FeatureStoreKind::kServer
                          ? "the rows on the GPU (--feature-store device or auto)"
                          : nullptr;
    if (why != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("--sampler gpu is for ", why));
    }
  }
  if (o.temporal && o.task == Task::kGraph) {
    return absl::InvalidArgumentError("--temporal does not apply to --task graph");
  }
  if ((o.infer || o.eval == EvalMode::kFull) && o.temporal) {
    return absl::InvalidArgumentError(
        "--infer and --eval full use full neighbourhoods: they do not apply with --temporal");
  }
  if (o.eval == EvalMode::kFull && o.task != Task::kNode) {
    return absl::InvalidArgumentError("--eval full is for node tasks (--task node)");
  }
  if (o.infer && (o.checkpoint_dir.empty() || o.out_dir.empty())) {
    return absl::InvalidArgumentError(
        "--infer needs --checkpoint-dir DIR (the trained model) and --out DIR (the outputs)");
  }
  if (o.infer && o.task != Task::kNode) {
    return absl::InvalidArgumentError("--infer is for node tasks (--task node)");
  }
  if (!o.infer && !o.out_dir.empty()) {
    return absl::InvalidArgumentError("--out is for --infer");
  }
  if (o.resume && o.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--resume needs --checkpoint-dir");
  }
  if (o.backend == Backend::kNccl && o.device != DeviceKind::kCuda) {
    return absl::InvalidArgumentError("--backend=nccl needs --device=cuda");
  }
  if (have_registry == have_servers) {
    return absl::InvalidArgumentError(
        "exactly one of --registry DIR or --servers HOST:PORT,... is required");
  }
  return o;
}

}  // namespace graphshard::client
