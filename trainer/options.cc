#include "trainer/options.h"

#include <cmath>
#include <functional>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "common/status_macros.h"

namespace graphshard::trainer {
namespace {

absl::Status BadValue(absl::string_view flag, absl::string_view value, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", value, ": expected ", want));
}

absl::Status ParseInt(absl::string_view flag, absl::string_view value, int min_value, int* out) {
  int v = 0;
  if (!absl::SimpleAtoi(value, &v) || v < min_value) {
    return BadValue(flag, value, absl::StrCat("an integer >= ", min_value));
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status ParseDouble(absl::string_view flag, absl::string_view value, double min_value,
                         bool min_inclusive, double* out) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v) || v < min_value ||
      (!min_inclusive && v == min_value)) {
    return BadValue(flag, value,
                    absl::StrCat("a number ", min_inclusive ? ">= " : "> ", min_value));
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status ParseFanouts(absl::string_view value, std::vector<int32_t>* out) {
  std::vector<int32_t> fanouts;
  for (absl::string_view part : absl::StrSplit(value, ',')) {
    int32_t f = 0;
    if (!absl::SimpleAtoi(part, &f) || (f < 1 && f != -1)) {
      return BadValue("fanouts", value, "a comma-separated list of positive integers or -1");
    }
    fanouts.push_back(f);
  }
  if (fanouts.empty()) return BadValue("fanouts", value, "at least one hop");
  *out = std::move(fanouts);
  return absl::OkStatus();
}

absl::Status ParseServers(absl::string_view value, std::vector<std::string>* out) {
  std::vector<std::string> servers;
  for (absl::string_view part : absl::StrSplit(value, ',')) {
    const size_t colon = part.rfind(':');
    int port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(part.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return BadValue("servers", value, "a comma-separated list of host:port (port 1-65535)");
    }
    servers.emplace_back(part);
  }
  *out = std::move(servers);
  return absl::OkStatus();
}

using Setter = std::function<absl::Status(absl::string_view)>;

// A setter accepting one of `choices`.
Setter OneOf(absl::string_view flag, std::vector<std::string> choices, std::string* out) {
  return [flag = std::string(flag), choices = std::move(choices), out](absl::string_view v) {
    for (const std::string& c : choices) {
      if (v == c) {
        *out = c;
        return absl::OkStatus();
      }
    }
    return BadValue(flag, v, absl::StrCat("one of ", absl::StrJoin(choices, ", ")));
  };
}

}  // namespace

std::string TrainerUsage() {
  return R"(usage: graphshard-trainer (--registry DIR | --servers HOST:PORT,...) [flags]
  --task node|graph        node classification, or graph classification on a partitioned TU
                           dataset (whole graphs per batch, GIN, sum pooling) (node)
  --model sage|gcn|gin     GraphSAGE (heterogeneous on a heterogeneous graph) or GCN; gin for
                           --task graph (sage; gin with --task graph)
  --layers N               GIN layers (--task graph) (3); node tasks: one layer per fanout
  --epochs N               training epochs (5)
  --hidden H               hidden channels (64)
  --fanouts 10,5           neighbours per hop, -1 = all; one SAGE layer per hop
  --batch-size B           seeds per minibatch (256)
  --lr X                   Adam learning rate (0.01)
  --weight-decay X         Adam weight decay (0)
  --seed S                 seed of initialisation, shuffling and sampling (0)
  --dropout P              dropout between layers (0.5)
  --replace                sample neighbours with replacement
  --eval-every N           evaluate val/test every N epochs and at the end; 0 = never (1)
  --normalize-features     divide each input row by max(row sum, 1) (off)
  --threads T              torch intra-op threads (1)
  --prefetch K             minibatches received and converted ahead (4)
  --device cpu|cuda        where the model runs; cuda uses cuda:LOCAL_RANK (cpu)
  --h2d registered|staged  cuda: the shared-memory ring segments are registered with CUDA once
                           and the GPU copies batches straight out of them; or batches are
                           copied into pinned buffers (intra-op threads), then to the GPU.
                           Batches not in a registered segment are staged (registered)
  --backend auto|gloo|nccl gradient all-reduce; auto = nccl on cuda, gloo on cpu (auto)
  --feature-dtype T        feature transport: float32, float16 or bfloat16 (float32)
  --checkpoint-dir DIR     write checkpoints here (atomic), at epoch ends and every N steps
  --checkpoint-every N     also every N training steps (0 = epoch ends only) (0)
  --resume                 continue from DIR's checkpoint (the exact step), if there is one
  --metrics-file PATH      JSONL: one record per epoch and the summary (rank 0)
  --progress-every-s S     progress line interval when stdout is not a terminal (10)
  --stop-after-steps N     stop with exit status 3 after N steps of this run (crash tests)
  --rpc-timeout-s S        deadline of every RPC (60)
  --server-wait-s S        wait this long for servers to report SERVING (60)
  --collective-timeout-s S rendezvous and Gloo collective timeout (300)
Rendezvous: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, or SLURM_PROCID,
SLURM_NTASKS, SLURM_LOCALID; default a single process.
)";
}

absl::StatusOr<TrainerOptions> ParseTrainerOptions(int argc, const char* const* argv) {
  TrainerOptions o;
  bool have_registry = false;
  bool have_servers = false;
  bool have_model = false;
  bool have_layers = false;
  bool have_fanouts = false;
  const std::map<std::string, Setter, std::less<>> valued = {
      {"registry",
       [&](absl::string_view v) {
         if (v.empty()) return BadValue("registry", v, "a directory");
         o.registry_dir = std::string(v);
         have_registry = true;
         return absl::OkStatus();
       }},
      {"servers",
       [&](absl::string_view v) {
         have_servers = true;
         return ParseServers(v, &o.servers);
       }},
      {"model",
       [&](absl::string_view v) {
         if (v != "sage" && v != "gcn" && v != "gin") {
           return absl::InvalidArgumentError(
               absl::StrCat("--model=", v, ": expected sage, gcn or gin"));
         }
         o.model = std::string(v);
         have_model = true;
         return absl::OkStatus();
       }},
      {"task",
       [&](absl::string_view v) {
         if (v != "node" && v != "graph") return BadValue("task", v, "node or graph");
         o.task = std::string(v);
         return absl::OkStatus();
       }},
      {"layers",
       [&](absl::string_view v) {
         have_layers = true;
         return ParseInt("layers", v, 1, &o.layers);
       }},
      {"epochs", [&](absl::string_view v) { return ParseInt("epochs", v, 1, &o.epochs); }},
      {"hidden", [&](absl::string_view v) { return ParseInt("hidden", v, 1, &o.hidden); }},
      {"fanouts",
       [&](absl::string_view v) {
         have_fanouts = true;
         return ParseFanouts(v, &o.fanouts);
       }},
      {"batch-size",
       [&](absl::string_view v) { return ParseInt("batch-size", v, 1, &o.batch_size); }},
      {"lr", [&](absl::string_view v) { return ParseDouble("lr", v, 0, false, &o.lr); }},
      {"weight-decay",
       [&](absl::string_view v) {
         return ParseDouble("weight-decay", v, 0, true, &o.weight_decay);
       }},
      {"seed",
       [&](absl::string_view v) {
         if (!absl::SimpleAtoi(v, &o.seed)) return BadValue("seed", v, "an unsigned integer");
         return absl::OkStatus();
       }},
      {"dropout",
       [&](absl::string_view v) {
         RETURN_IF_ERROR(ParseDouble("dropout", v, 0, true, &o.dropout));
         if (o.dropout >= 1) return BadValue("dropout", v, "a number in [0, 1)");
         return absl::OkStatus();
       }},
      {"eval-every",
       [&](absl::string_view v) { return ParseInt("eval-every", v, 0, &o.eval_every); }},
      {"threads", [&](absl::string_view v) { return ParseInt("threads", v, 1, &o.threads); }},
      {"prefetch", [&](absl::string_view v) { return ParseInt("prefetch", v, 1, &o.prefetch); }},
      {"device", OneOf("device", {"cpu", "cuda"}, &o.device)},
      {"backend", OneOf("backend", {"auto", "gloo", "nccl"}, &o.backend)},
      {"h2d", OneOf("h2d", {"registered", "staged"}, &o.h2d)},
      {"feature-dtype", OneOf("feature-dtype", {"float32", "float16", "bfloat16"}, &o.feature_dtype)},
      {"checkpoint-dir",
       [&](absl::string_view v) {
         if (v.empty()) return BadValue("checkpoint-dir", v, "a directory");
         o.checkpoint_dir = std::string(v);
         return absl::OkStatus();
       }},
      {"checkpoint-every",
       [&](absl::string_view v) {
         if (!absl::SimpleAtoi(v, &o.checkpoint_every) || o.checkpoint_every < 0) {
           return BadValue("checkpoint-every", v, "an integer >= 0");
         }
         return absl::OkStatus();
       }},
      {"metrics-file",
       [&](absl::string_view v) {
         if (v.empty()) return BadValue("metrics-file", v, "a path");
         o.metrics_file = std::string(v);
         return absl::OkStatus();
       }},
      {"progress-every-s",
       [&](absl::string_view v) {
         return ParseDouble("progress-every-s", v, 0, false, &o.progress_every_s);
       }},
      {"stop-after-steps",
       [&](absl::string_view v) {
         if (!absl::SimpleAtoi(v, &o.stop_after_steps) || o.stop_after_steps < 1) {
           return BadValue("stop-after-steps", v, "an integer >= 1");
         }
         return absl::OkStatus();
       }},
      {"rpc-timeout-s",
       [&](absl::string_view v) {
         return ParseDouble("rpc-timeout-s", v, 0, false, &o.rpc_timeout_s);
       }},
      {"server-wait-s",
       [&](absl::string_view v) {
         return ParseDouble("server-wait-s", v, 0, true, &o.server_wait_s);
       }},
      {"collective-timeout-s",
       [&](absl::string_view v) {
         return ParseDouble("collective-timeout-s", v, 0, false, &o.collective_timeout_s);
       }},
  };
  const std::map<std::string, bool*, std::less<>> switches = {
      {"replace", &o.replace},
      {"normalize-features", &o.normalize_features},
      {"resume", &o.resume},
  };

  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") return absl::CancelledError(TrainerUsage());
    if (!absl::ConsumePrefix(&arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "' (flags start with --)"));
    }
    absl::optional<absl::string_view> value;
    if (const size_t eq = arg.find('='); eq != absl::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (auto it = switches.find(arg); it != switches.end()) {
      if (value.has_value()) {
        if (*value == "true" || *value == "1") {
          *it->second = true;
        } else if (*value == "false" || *value == "0") {
          *it->second = false;
        } else {
          return BadValue(arg, *value, "true or false");
        }
      } else {
        *it->second = true;
      }
      continue;
    }
    if (absl::string_view name = arg; absl::ConsumePrefix(&name, "no-")) {
      if (auto it = switches.find(name); it != switches.end() && !value.has_value()) {
        *it->second = false;
        continue;
      }
    }
    auto it = valued.find(arg);
    if (it == valued.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", arg, "; see --help"));
    }
    if (!value.has_value()) {
      if (i + 1 >= argc)
        return absl::InvalidArgumentError(absl::StrCat("--", arg, ": missing value"));
      value = argv[++i];
    }
    RETURN_IF_ERROR(it->second(*value));
  }
  if (o.task == "graph") {
    if (!have_model) o.model = "gin";
    if (o.model != "gin") {
      return absl::InvalidArgumentError(
          absl::StrCat("--task graph trains --model gin, not --model ", o.model));
    }
    if (have_fanouts) {
      return absl::InvalidArgumentError(
          "--fanouts does not apply to --task graph: batches hold whole graphs (use --layers)");
    }
  } else {
    if (o.model == "gin") {
      return absl::InvalidArgumentError("--model gin is for graph classification: add --task graph");
    }
    if (have_layers && o.layers != std::ssize(o.fanouts)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--layers ", o.layers, ": node tasks have one layer per fanout (",
                       o.fanouts.size(), " in --fanouts)"));
    }
  }
  if (o.resume && o.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--resume needs --checkpoint-dir");
  }
  if (o.backend == "nccl" && o.device != "cuda") {
    return absl::InvalidArgumentError("--backend=nccl needs --device=cuda");
  }
  if (have_registry == have_servers) {
    return absl::InvalidArgumentError(
        "exactly one of --registry DIR or --servers HOST:PORT,... is required");
  }
  return o;
}

}  // namespace graphshard::trainer
