// The checkpoint's config fingerprint covers every option that changes what a run computes:
// each TrainerOptions field is classified below (the count is checked against the struct, so a
// new field fails EveryOptionIsClassified until it is added here), and changing any one of the
// result-changing ones changes the fingerprint while the others leave it alone.
#include "client/config_fingerprint.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "client/options.h"
#include "gtest/gtest.h"

namespace graphshard::client {
namespace {

// Converts to any field type: T{AnyField{}, ...} with N of them compiles for N <= the number of
// fields of the aggregate T.
struct AnyField {
  template <typename T>
  operator T() const;  // NOLINT: only used in unevaluated contexts
};

template <typename T, typename... Fields>
constexpr size_t CountFields(Fields... fields) {
  if constexpr (requires { T{fields..., AnyField{}}; }) {
    return CountFields<T>(fields..., AnyField{});
  } else {
    return sizeof...(Fields);
  }
}

struct FieldCase {
  const char* field;
  bool in_fingerprint;
  std::function<void(TrainerOptions&)> setup;   // applied to both sides (e.g. the task)
  std::function<void(TrainerOptions&)> change;  // a value other than setup's
};

void None(TrainerOptions&) {}
void GraphTask(TrainerOptions& o) {
  o.task = Task::kGraph;
  o.model = "gin";
}

void LinkTask(TrainerOptions& o) { o.task = Task::kLink; }

// One row per TrainerOptions field.
std::vector<FieldCase> Fields() {
  return {
      {"registry_dir", false, None, [](TrainerOptions& o) { o.registry_dir = "/other"; }},
      {"servers", false, None,
       [](TrainerOptions& o) {
         o.servers = {"h:1", "h:2"};
       }},
      {"task", true, None, [](TrainerOptions& o) { o.task = Task::kGraph; }},
      {"model", true, None, [](TrainerOptions& o) { o.model = "gcn"; }},
      {"layers", true, GraphTask, [](TrainerOptions& o) { o.layers = 5; }},
      {"epochs", false, None, [](TrainerOptions& o) { o.epochs = 50; }},
      {"hidden", true, None, [](TrainerOptions& o) { o.hidden = 65; }},
      {"fanouts", true, None,
       [](TrainerOptions& o) {
         o.fanouts = {10, 6};
       }},
      {"batch_size", true, None, [](TrainerOptions& o) { o.batch_size = 257; }},
      {"lr", true, None, [](TrainerOptions& o) { o.lr = 0.01000001; }},
      {"weight_decay", true, None, [](TrainerOptions& o) { o.weight_decay = 1e-9; }},
      {"seed", true, None, [](TrainerOptions& o) { o.seed = 1; }},
      {"dropout", true, None, [](TrainerOptions& o) { o.dropout = 0.50000001; }},
      {"replace", true, None, [](TrainerOptions& o) { o.replace = true; }},
      {"temporal", true, None, [](TrainerOptions& o) { o.temporal = true; }},
      {"temporal_strict", true, [](TrainerOptions& o) { o.temporal = true; },
       [](TrainerOptions& o) { o.temporal_strict = true; }},
      {"temporal_strategy", true, [](TrainerOptions& o) { o.temporal = true; },
       [](TrainerOptions& o) { o.temporal_strategy = "last"; }},
      {"eval_every", false, None, [](TrainerOptions& o) { o.eval_every = 0; }},
      {"normalize_features", true, None, [](TrainerOptions& o) { o.normalize_features = true; }},
      {"threads", false, None, [](TrainerOptions& o) { o.threads = 8; }},
      {"prefetch", false, None, [](TrainerOptions& o) { o.prefetch = 1; }},
      {"reuse_rows", false, None, [](TrainerOptions& o) { o.reuse_rows = false; }},
      // With an explicit precision: --precision auto resolves by device
      // (PrecisionAutoIsWhatItResolvesTo).
      {"device", false, [](TrainerOptions& o) { o.precision = Precision::kFp32; },
       [](TrainerOptions& o) { o.device = DeviceKind::kCuda; }},
      {"h2d", false, None, [](TrainerOptions& o) { o.h2d = H2dMode::kStaged; }},
      {"backend", false, None, [](TrainerOptions& o) { o.backend = Backend::kGloo; }},
      {"feature_dtype", true, None,
       [](TrainerOptions& o) { o.feature_dtype = FeatureDtype::kBFloat16; }},
      {"trim", false, None, [](TrainerOptions& o) { o.trim = Trimming::kOff; }},
      // The same function over padded batches: float rounding and dropout draws only.
      {"static_shapes", false, None,
       [](TrainerOptions& o) { o.static_shapes = StaticShapes::kOn; }},
      // The same mean, its terms added in another order: float rounding only.
      {"aggregation", false, None, [](TrainerOptions& o) { o.aggregation = Aggregation::kTorch; }},
      // The same batches, sampled on the GPU (trainer/gpu_sampler.h).
      {"sampler", false, None, [](TrainerOptions& o) { o.sampler = Sampler::kGpu; }},
      // The same batches, the topology read over PCIe.
      {"sampler_topology", false, None,
       [](TrainerOptions& o) { o.sampler_topology = SamplerTopology::kHost; }},
      {"precision", true, None,
       [](TrainerOptions& o) {
         o.precision = o.precision == Precision::kBf16 ? Precision::kFp32 : Precision::kBf16;
       }},
      // Which seeds make up each rank's steps.
      {"assignment", true, None, [](TrainerOptions& o) { o.assignment = Assignment::kSpread; }},
      // The same rows, gathered on the trainer instead of the server (bit-identical weights,
      // e2e.launch_cora).
      {"feature_store", false, None,
       [](TrainerOptions& o) { o.feature_store = FeatureStoreKind::kDevice; }},
      // The same rows from other tiers of the store (bit-identical weights, e2e.tiered_store).
      {"device_cache_mib", false, None, [](TrainerOptions& o) { o.device_cache_mib = 1; }},
      {"device_tier", false, None, [](TrainerOptions& o) { o.device_tier = DeviceTier::kShared; }},
      {"host_tier", false, None, [](TrainerOptions& o) { o.host_tier = HostTier::kNone; }},
      {"host_cache_mib", false, None, [](TrainerOptions& o) { o.host_cache_mib = 1; }},
      {"remote_rows", false, None, [](TrainerOptions& o) { o.remote_rows = RemoteRows::kOwner; }},
      // The same computation in another summation order (CUDA's index_add), as trim.
      {"deterministic", false, None, [](TrainerOptions& o) { o.deterministic = true; }},
      {"checkpoint_dir", false, None, [](TrainerOptions& o) { o.checkpoint_dir = "/ck"; }},
      {"checkpoint_every", false, None, [](TrainerOptions& o) { o.checkpoint_every = 3; }},
      {"resume", false, None, [](TrainerOptions& o) { o.resume = true; }},
      {"metrics_file", false, None, [](TrainerOptions& o) { o.metrics_file = "/m.jsonl"; }},
      {"tensorboard_dir", false, None, [](TrainerOptions& o) { o.tensorboard_dir = "/tb"; }},
      {"progress_every_s", false, None, [](TrainerOptions& o) { o.progress_every_s = 1; }},
      {"stop_after_steps", false, None, [](TrainerOptions& o) { o.stop_after_steps = 2; }},
      {"profile_dir", false, None, [](TrainerOptions& o) { o.profile_dir = "/prof"; }},
      {"rpc_timeout_s", false, None, [](TrainerOptions& o) { o.rpc_timeout_s = 1; }},
      {"server_wait_s", false, None, [](TrainerOptions& o) { o.server_wait_s = 1; }},
      {"stall_timeout_s", false, None, [](TrainerOptions& o) { o.stall_timeout_s = 1; }},
      {"collective_timeout_s", false, None, [](TrainerOptions& o) { o.collective_timeout_s = 1; }},
      {"security", false, None, [](TrainerOptions& o) { o.security.token_file = "/job/token"; }},
      {"link", true, LinkTask, [](TrainerOptions& o) { o.link.neg_ratio = 3; }},
      // Inference reads the model; it neither changes it nor draws randomness.
      {"infer", false, None, [](TrainerOptions& o) { o.infer = true; }},
      {"out_dir", false, None, [](TrainerOptions& o) { o.out_dir = "/out"; }},
      {"eval", false, None, [](TrainerOptions& o) { o.eval = EvalMode::kFull; }},
  };
}

TEST(ConfigFingerprint, EveryOptionIsClassified) {
  EXPECT_EQ(Fields().size(), CountFields<TrainerOptions>())
      << "a TrainerOptions field is missing from Fields(): decide whether it changes results "
         "(then add it to ConfigFingerprint) and add its row";
}

TEST(ConfigFingerprint, ChangesWithEveryResultChangingOptionOnly) {
  for (const FieldCase& c : Fields()) {
    TrainerOptions base;
    c.setup(base);
    TrainerOptions changed = base;
    c.change(changed);
    const std::string before = ConfigFingerprint(base, 2);
    const std::string after = ConfigFingerprint(changed, 2);
    if (c.in_fingerprint) {
      EXPECT_NE(before, after) << c.field << " changes results but not the fingerprint";
    } else {
      EXPECT_EQ(before, after) << c.field;
    }
  }
}

// --precision auto is tf32 on cuda, fp32 on the CPU, and the fingerprint holds what it resolved
// to (fp32 is not written: earlier checkpoints were fp32).
TEST(ConfigFingerprint, PrecisionAutoIsWhatItResolvesTo) {
  TrainerOptions cpu, cuda, tf32, bf16;
  cuda.device = DeviceKind::kCuda;
  tf32.device = DeviceKind::kCuda;
  tf32.precision = Precision::kTf32;
  bf16.device = DeviceKind::kCuda;
  bf16.precision = Precision::kBf16;
  EXPECT_EQ(cpu.precision, Precision::kAuto);
  EXPECT_EQ(ConfigFingerprint(cpu, 1).find("precision"), std::string::npos);
  EXPECT_NE(ConfigFingerprint(cuda, 1).find(" precision=tf32"), std::string::npos)
      << ConfigFingerprint(cuda, 1);
  EXPECT_EQ(ConfigFingerprint(cuda, 1), ConfigFingerprint(tf32, 1));
  // A checkpoint of an explicit bf16 run (or of auto before it meant tf32) is another config.
  EXPECT_NE(ConfigFingerprint(cuda, 1), ConfigFingerprint(bf16, 1));
}

TEST(ConfigFingerprint, ChangesWithWorldSize) {
  EXPECT_NE(ConfigFingerprint(TrainerOptions{}, 1), ConfigFingerprint(TrainerOptions{}, 2));
}

// Checkpoints written before --assignment were of assignment part (the default). Before the
// per-task defaults the node task's weight decay was 0: such a checkpoint resumes with
// --weight-decay 0.
TEST(ConfigFingerprint, KeepsTheSpellingOfEarlierCheckpoints) {
  TrainerOptions earlier;
  earlier.weight_decay = 0;
  EXPECT_EQ(ConfigFingerprint(earlier, 1),
            "task=node layers=0 model=sage hidden=64 fanouts=10,5 batch=256 seed=0 world=1 "
            "lr=0.01 wd=0 dropout=0.5 replace=0 dtype=float32 normalize=0");
  EXPECT_EQ(ConfigFingerprint(TrainerOptions{}, 1),
            "task=node layers=0 model=sage hidden=64 fanouts=10,5 batch=256 seed=0 world=1 "
            "lr=0.01 wd=0.0005 dropout=0.5 replace=0 dtype=float32 normalize=0");
  TrainerOptions spread;
  spread.assignment = Assignment::kSpread;
  EXPECT_EQ(ConfigFingerprint(spread, 1),
            ConfigFingerprint(TrainerOptions{}, 1) + " assignment=spread");
  TrainerOptions graph;
  GraphTask(graph);
  graph.weight_decay = 5e-4;
  graph.feature_dtype = FeatureDtype::kFloat16;
  EXPECT_EQ(ConfigFingerprint(graph, 3),
            "task=graph layers=3 model=gin hidden=64 fanouts=10,5 batch=256 seed=0 world=3 "
            "lr=0.01 wd=0.0005 dropout=0.5 replace=0 dtype=float16 normalize=0");
}

// --infer accepts a checkpoint of the same model trained with other optimisation settings, and
// names every model setting that differs.
TEST(CheckSameModel, AcceptsOtherTrainingSettingsAndNamesModelDifferences) {
  TrainerOptions trained;
  trained.fanouts = {25, 10};
  trained.lr = 0.5;
  trained.batch_size = 7;
  const std::string config = ConfigFingerprint(trained, 4);
  TrainerOptions infer;  // fanouts 10,5: as many layers
  EXPECT_TRUE(CheckSameModel(config, infer, "ck").ok());
  infer.hidden = 32;
  infer.model = "gcn";
  infer.fanouts = {5};
  infer.normalize_features = true;
  absl::Status s = CheckSameModel(config, infer, "ck/checkpoint.pt");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  for (const char* want :
       {"ck/checkpoint.pt", "model sage there, gcn here", "hidden 64 there, 32 here",
        "layers 2 there, 1 here", "normalize 0 there, 1 here"}) {
    EXPECT_NE(s.message().find(want), absl::string_view::npos) << want << " in " << s.message();
  }
  EXPECT_EQ(CheckSameModel("garbage", TrainerOptions{}, "ck").code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace graphshard::client
