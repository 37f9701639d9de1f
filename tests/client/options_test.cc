#include "client/options.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "client/config_fingerprint.h"
#include "client/feature_rows.h"
#include "gtest/gtest.h"

namespace graphshard::client {
namespace {

// The registry's names and tasks, in its order (the parser reads only these; the factories are
// in the Torch library, which this test does not link). model_registry_test parses with the
// real table.
constexpr ModelInfo kTestModels[] = {
    {"sage", Task::kNode, nullptr}, {"gcn", Task::kNode, nullptr}, {"gin", Task::kGraph, nullptr}};

absl::StatusOr<TrainerOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "graphshard-trainer");
  return ParseTrainerOptions(static_cast<int>(args.size()), args.data(), kTestModels);
}

TEST(ParseTrainerOptions, Defaults) {
  absl::StatusOr<TrainerOptions> o = Parse({"--registry", "/tmp/reg"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->registry_dir, "/tmp/reg");
  EXPECT_EQ(o->model, "sage");
  EXPECT_EQ(o->epochs, 5);
  EXPECT_EQ(o->hidden, 64);
  EXPECT_EQ(o->fanouts, (std::vector<int32_t>{10, 5}));
  EXPECT_EQ(o->batch_size, 256);
  EXPECT_DOUBLE_EQ(o->lr, 0.01);
  EXPECT_DOUBLE_EQ(o->weight_decay, 5e-4);
  EXPECT_EQ(o->seed, 0u);
  EXPECT_DOUBLE_EQ(o->dropout, 0.5);
  EXPECT_FALSE(o->replace);
  EXPECT_EQ(o->eval_every, 1);
  EXPECT_EQ(o->threads, 1);
  EXPECT_FALSE(o->normalize_features);
  EXPECT_DOUBLE_EQ(o->rpc_timeout_s, 60);
  EXPECT_DOUBLE_EQ(o->server_wait_s, 60);
  EXPECT_EQ(o->prefetch, 0);  // auto
  EXPECT_EQ(o->device, DeviceKind::kCpu);
  EXPECT_EQ(o->backend, Backend::kAuto);
  EXPECT_EQ(o->feature_dtype, FeatureDtype::kFloat32);
  EXPECT_EQ(o->trim, Trimming::kOn);
  EXPECT_EQ(o->precision, Precision::kAuto);
  EXPECT_EQ(ResolvePrecision(o->precision, DeviceKind::kCpu), Precision::kFp32);
  EXPECT_EQ(ResolvePrecision(o->precision, DeviceKind::kCuda), Precision::kTf32);
  EXPECT_TRUE(o->checkpoint_dir.empty());
  EXPECT_FALSE(o->resume);
  EXPECT_EQ(o->task, Task::kNode);
  EXPECT_EQ(o->feature_store, FeatureStoreKind::kAuto);
}

// Each task trains with the settings its end-to-end tests tuned (TaskDefaults), unless a flag
// says otherwise.
TEST(ParseTrainerOptions, EachTaskTakesItsOwnDefaults) {
  absl::StatusOr<TrainerOptions> link = Parse({"--registry", "r", "--task", "link"});
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(link->hidden, 128);
  EXPECT_EQ(link->fanouts, (std::vector<int32_t>{10, 10}));
  EXPECT_EQ(link->batch_size, 128);
  EXPECT_DOUBLE_EQ(link->lr, 0.01);
  EXPECT_DOUBLE_EQ(link->weight_decay, 0);
  EXPECT_DOUBLE_EQ(link->dropout, 0.3);
  EXPECT_TRUE(link->normalize_features);
  EXPECT_EQ(link->epochs, 5) << "not a per-task flag";

  absl::StatusOr<TrainerOptions> graph = Parse({"--registry", "r", "--task", "graph"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->hidden, 32);
  EXPECT_EQ(graph->batch_size, 32);
  EXPECT_DOUBLE_EQ(graph->lr, 0.01);
  EXPECT_DOUBLE_EQ(graph->weight_decay, 0);
  EXPECT_DOUBLE_EQ(graph->dropout, 0.2);
  EXPECT_FALSE(graph->normalize_features);
  EXPECT_EQ(graph->layers, 3);

  // The order of --task among the flags does not matter.
  absl::StatusOr<TrainerOptions> late = Parse({"--registry", "r", "--epochs", "2", "--task=link"});
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(late->hidden, 128);
  // A default-constructed TrainerOptions is node's row, as the parser gives it.
  const TrainerOptions plain;
  const TaskDefaults& node = DefaultsFor(Task::kNode);
  EXPECT_EQ(plain.hidden, node.hidden);
  EXPECT_EQ(plain.fanouts, node.fanouts);
  EXPECT_EQ(plain.batch_size, node.batch_size);
  EXPECT_DOUBLE_EQ(plain.weight_decay, node.weight_decay);
  EXPECT_DOUBLE_EQ(plain.dropout, node.dropout);
  EXPECT_EQ(plain.normalize_features, node.normalize_features);
}

TEST(ParseTrainerOptions, AFlagGivenWinsOverItsTasksDefault) {
  absl::StatusOr<TrainerOptions> o =
      Parse({"--registry", "r", "--task", "link", "--hidden", "64", "--fanouts", "10,5",
             "--batch-size=512", "--lr", "0.005", "--weight-decay", "1e-3", "--dropout", "0.5",
             "--no-normalize-features"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->hidden, 64);
  EXPECT_EQ(o->fanouts, (std::vector<int32_t>{10, 5}));
  EXPECT_EQ(o->batch_size, 512);
  EXPECT_DOUBLE_EQ(o->lr, 0.005);
  EXPECT_DOUBLE_EQ(o->weight_decay, 1e-3);
  EXPECT_DOUBLE_EQ(o->dropout, 0.5);
  EXPECT_FALSE(o->normalize_features);
  // One flag given, the others still the task's.
  o = Parse({"--registry", "r", "--task", "link", "--hidden", "32"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->hidden, 32);
  EXPECT_EQ(o->fanouts, (std::vector<int32_t>{10, 10}));
  EXPECT_TRUE(o->normalize_features);
  // A value equal to another task's default is still the user's: node keeps --weight-decay 0.
  o = Parse({"--registry", "r", "--weight-decay", "0", "--normalize-features"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_DOUBLE_EQ(o->weight_decay, 0);
  EXPECT_TRUE(o->normalize_features);
  o = Parse({"--registry", "r", "--task", "graph", "--dropout", "0", "--hidden", "64"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_DOUBLE_EQ(o->dropout, 0);
  EXPECT_EQ(o->hidden, 64);
  EXPECT_EQ(o->batch_size, 32);
}

// The parser resolves the defaults, so the config fingerprint (and a checkpoint's) holds the
// values the run trains with: a run resumed with the same command, or with the defaults spelled
// out, matches it; one of another task's defaults does not.
TEST(ParseTrainerOptions, FingerprintHoldsTheTasksDefaults) {
  absl::StatusOr<TrainerOptions> link = Parse({"--registry", "r", "--task", "link", "--seed", "1"});
  ASSERT_TRUE(link.ok()) << link.status();
  const std::string fingerprint = ConfigFingerprint(*link, 2);
  for (const char* want :
       {"hidden=128 fanouts=10,10 batch=128", "lr=0.01 wd=0 dropout=0.3 ", "normalize=1"}) {
    EXPECT_NE(fingerprint.find(want), std::string::npos) << want << " in " << fingerprint;
  }
  absl::StatusOr<TrainerOptions> spelled =
      Parse({"--registry", "r", "--seed", "1", "--task", "link", "--hidden", "128", "--fanouts",
             "10,10", "--batch-size", "128", "--lr", "0.01", "--weight-decay", "0", "--dropout",
             "0.3", "--normalize-features"});
  ASSERT_TRUE(spelled.ok()) << spelled.status();
  EXPECT_EQ(ConfigFingerprint(*spelled, 2), fingerprint);
  absl::StatusOr<TrainerOptions> node_values =
      Parse({"--registry", "r", "--seed", "1", "--task", "link", "--hidden", "64", "--fanouts",
             "10,5", "--batch-size", "256", "--dropout", "0.5", "--no-normalize-features"});
  ASSERT_TRUE(node_values.ok()) << node_values.status();
  EXPECT_NE(ConfigFingerprint(*node_values, 2), fingerprint);
}

TEST(ParseTrainerOptions, GraphTaskDefaultsToGinAndRefusesNodeFlags) {
  absl::StatusOr<TrainerOptions> o = Parse({"--registry", "r", "--task", "graph", "--layers", "4"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->task, Task::kGraph);
  EXPECT_EQ(o->model, "gin");
  EXPECT_EQ(o->layers, 4);
  EXPECT_FALSE(Parse({"--registry", "r", "--task", "graph", "--model", "sage"}).ok());
  EXPECT_FALSE(Parse({"--registry", "r", "--task", "graph", "--fanouts", "5,5"}).ok());
  EXPECT_FALSE(Parse({"--registry", "r", "--model", "gin"}).ok());  // gin needs --task graph
  EXPECT_FALSE(Parse({"--registry", "r", "--task", "edge"}).ok());
  EXPECT_FALSE(Parse({"--registry", "r", "--layers", "3"}).ok());  // node: one per fanout (2)
  EXPECT_TRUE(Parse({"--registry", "r", "--layers", "2"}).ok());
}

TEST(ParseTrainerOptions, ParsesTheNewFlags) {
  absl::StatusOr<TrainerOptions> o = Parse({"--registry",
                                            "r",
                                            "--model",
                                            "gcn",
                                            "--device=cuda",
                                            "--backend",
                                            "nccl",
                                            "--feature-dtype",
                                            "bfloat16",
                                            "--checkpoint-dir",
                                            "/tmp/ck",
                                            "--checkpoint-every",
                                            "7",
                                            "--resume",
                                            "--metrics-file",
                                            "/tmp/m.jsonl",
                                            "--prefetch",
                                            "2",
                                            "--stop-after-steps",
                                            "3",
                                            "--trim",
                                            "off",
                                            "--precision=tf32",
                                            "--tensorboard",
                                            "/tmp/tb"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->tensorboard_dir, "/tmp/tb");
  EXPECT_EQ(o->model, "gcn");
  EXPECT_EQ(o->device, DeviceKind::kCuda);
  EXPECT_EQ(o->backend, Backend::kNccl);
  EXPECT_EQ(o->feature_dtype, FeatureDtype::kBFloat16);
  EXPECT_EQ(o->checkpoint_dir, "/tmp/ck");
  EXPECT_EQ(o->checkpoint_every, 7);
  EXPECT_TRUE(o->resume);
  EXPECT_EQ(o->metrics_file, "/tmp/m.jsonl");
  EXPECT_EQ(o->prefetch, 2);
  EXPECT_EQ(o->stop_after_steps, 3);
  EXPECT_EQ(o->trim, Trimming::kOff);
  EXPECT_EQ(o->precision, Precision::kTf32);
  EXPECT_EQ(ResolvePrecision(o->precision, DeviceKind::kCuda), Precision::kTf32);
}

TEST(ParseTrainerOptions, ParsesEveryFlagInBothForms) {
  absl::StatusOr<TrainerOptions> o = Parse({"--servers=127.0.0.1:5000,localhost:5001",
                                            "--epochs",
                                            "20",
                                            "--hidden=16",
                                            "--fanouts",
                                            "15,-1,5",
                                            "--batch-size",
                                            "32",
                                            "--lr=0.005",
                                            "--seed",
                                            "9",
                                            "--dropout",
                                            "0",
                                            "--replace",
                                            "--eval-every",
                                            "2",
                                            "--threads=2",
                                            "--normalize-features",
                                            "--rpc-timeout-s",
                                            "5",
                                            "--server-wait-s=1"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->servers, (std::vector<std::string>{"127.0.0.1:5000", "localhost:5001"}));
  EXPECT_EQ(o->epochs, 20);
  EXPECT_EQ(o->hidden, 16);
  EXPECT_EQ(o->fanouts, (std::vector<int32_t>{15, -1, 5}));
  EXPECT_EQ(o->batch_size, 32);
  EXPECT_DOUBLE_EQ(o->lr, 0.005);
  EXPECT_EQ(o->seed, 9u);
  EXPECT_DOUBLE_EQ(o->dropout, 0);
  EXPECT_TRUE(o->replace);
  EXPECT_EQ(o->eval_every, 2);
  EXPECT_EQ(o->threads, 2);
  EXPECT_TRUE(o->normalize_features);
  EXPECT_DOUBLE_EQ(o->rpc_timeout_s, 5);
  EXPECT_DOUBLE_EQ(o->server_wait_s, 1);
}

TEST(ParseTrainerOptions, RejectsBadInputWithTheFlagName) {
  struct Case {
    std::vector<const char*> args;
    const char* mentions;
  };
  for (const Case& c : std::vector<Case>{
           {{"--registry", "r", "--model", "gin2"}, "--model"},
           {{"--registry", "r", "--device", "tpu"}, "--device"},
           {{"--registry", "r", "--backend", "mpi"}, "--backend"},
           {{"--registry", "r", "--backend", "nccl"}, "--backend=nccl"},
           {{"--registry", "r", "--feature-dtype", "int8"}, "--feature-dtype"},
           {{"--registry", "r", "--trim", "yes"}, "--trim"},
           {{"--registry", "r", "--sampler", "cpu"}, "--sampler"},
           // --sampler gpu: a GPU, a node task, no --temporal, the rows on the GPU.
           {{"--registry", "r", "--sampler", "gpu"}, "--device cuda"},
           {{"--registry", "r", "--device", "cuda", "--sampler", "gpu", "--task", "link"},
            "--task node"},
           {{"--registry", "r", "--device", "cuda", "--sampler", "gpu", "--temporal"},
            "--temporal"},
           {{"--registry", "r", "--device", "cuda", "--sampler", "gpu", "--feature-store",
             "server"},
            "--feature-store device"},
           {{"--registry", "r", "--precision", "fp16"}, "--precision"},
           {{"--registry", "r", "--prefetch", "0"}, "--prefetch"},
           {{"--registry", "r", "--prefetch", "many"}, "--prefetch"},
           {{"--registry", "r", "--prefetch", "1001"}, "--prefetch"},
           {{"--registry", "r", "--feature-store", "gpu"}, "--feature-store"},
           {{"--registry", "r", "--task", "graph", "--feature-store", "device"}, "--feature-store"},
           {{"--registry", "r", "--resume"}, "--checkpoint-dir"},
           {{"--registry", "r", "--checkpoint-every", "-1"}, "--checkpoint-every"},
           {{"--registry", "r", "--epochs", "0"}, "--epochs"},
           {{"--registry", "r", "--fanouts", "10,0"}, "--fanouts"},
           {{"--registry", "r", "--fanouts", "10,x"}, "--fanouts"},
           {{"--registry", "r", "--lr", "-1"}, "--lr"},
           {{"--registry", "r", "--dropout", "1"}, "--dropout"},
           {{"--registry", "r", "--batch-size"}, "--batch-size"},
           {{"--registry", "r", "--bogus", "1"}, "--bogus"},
           {{"--servers", "nohost"}, "--servers"},
           {{"--servers", "h:99999"}, "--servers"},
           {{"--epochs", "3"}, "--registry"},
           {{"--registry", "r", "--servers", "h:1"}, "--registry"},
       }) {
    absl::StatusOr<TrainerOptions> o = Parse(c.args);
    ASSERT_FALSE(o.ok()) << c.mentions;
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find(c.mentions), absl::string_view::npos)
        << o.status().message();
  }
}

TEST(ParseTrainerOptions, FeatureStoreDevice) {
  absl::StatusOr<TrainerOptions> o = Parse({"--registry", "r", "--feature-store", "device"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->feature_store, FeatureStoreKind::kDevice);
  o = Parse({"--registry", "r", "--feature-store", "server"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->feature_store, FeatureStoreKind::kServer);
  o = Parse({"--registry", "r", "--task", "graph"});  // auto: no refusal, graph streams rows
  ASSERT_TRUE(o.ok()) << o.status();
}

// --feature-store auto (the default): rows on a GPU that has room for them (at most half of its
// free memory), for node and link tasks; with the batches everywhere else.
TEST(ResolveFeatureStore, AutoHoldsTheRowsOnAGpuWithRoomForThemAndOnlyThere) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  const auto resolve = [](Task task, bool cuda, int64_t rows, absl::optional<int64_t> free) {
    return ResolveFeatureStore(FeatureStoreKind::kAuto, task, cuda, rows, free);
  };
  EXPECT_EQ(resolve(Task::kNode, true, 1 * kGiB, 80 * kGiB), FeatureStoreKind::kDevice);
  EXPECT_EQ(resolve(Task::kLink, true, 1 * kGiB, 2 * kGiB), FeatureStoreKind::kDevice);
  EXPECT_EQ(resolve(Task::kNode, true, 1 * kGiB + 1, 2 * kGiB), FeatureStoreKind::kServer);
  EXPECT_EQ(resolve(Task::kNode, true, 57 * kGiB, 80 * kGiB), FeatureStoreKind::kServer);
  EXPECT_EQ(resolve(Task::kNode, false, 1, 80 * kGiB), FeatureStoreKind::kServer);  // cpu
  EXPECT_EQ(resolve(Task::kGraph, true, 1, 80 * kGiB), FeatureStoreKind::kServer);
  EXPECT_EQ(resolve(Task::kNode, true, 1, absl::nullopt), FeatureStoreKind::kServer);
  EXPECT_EQ(resolve(Task::kNode, true, 0, 80 * kGiB), FeatureStoreKind::kServer);  // no rows
  // An explicit choice stands, whatever the device.
  EXPECT_EQ(
      ResolveFeatureStore(FeatureStoreKind::kDevice, Task::kNode, false, 100 * kGiB, absl::nullopt),
      FeatureStoreKind::kDevice);
  EXPECT_EQ(ResolveFeatureStore(FeatureStoreKind::kServer, Task::kNode, true, 1, 80 * kGiB),
            FeatureStoreKind::kServer);
}

// The trainer's --feature-store auto: the tiered store on every GPU (node and link tasks with
// features), however large the table; with the batches on a CPU, for graphs, without features.
TEST(ResolveTieredFeatureStore, AutoIsTheTieredStoreOnEveryGpuWhateverTheTableSize) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  const auto resolve = [](Task task, bool cuda, int64_t rows) {
    return ResolveTieredFeatureStore(FeatureStoreKind::kAuto, task, cuda, rows);
  };
  EXPECT_EQ(resolve(Task::kNode, true, 1 * kGiB), FeatureStoreKind::kDevice);
  EXPECT_EQ(resolve(Task::kNode, true, 57 * kGiB), FeatureStoreKind::kDevice);  // papers100M
  EXPECT_EQ(resolve(Task::kLink, true, 1), FeatureStoreKind::kDevice);
  EXPECT_EQ(resolve(Task::kNode, false, 1), FeatureStoreKind::kServer);  // cpu
  EXPECT_EQ(resolve(Task::kGraph, true, 1), FeatureStoreKind::kServer);
  EXPECT_EQ(resolve(Task::kNode, true, 0), FeatureStoreKind::kServer);  // no rows
  EXPECT_EQ(ResolveTieredFeatureStore(FeatureStoreKind::kDevice, Task::kNode, false, 1),
            FeatureStoreKind::kDevice);
  EXPECT_EQ(ResolveTieredFeatureStore(FeatureStoreKind::kServer, Task::kNode, true, 1),
            FeatureStoreKind::kServer);
}

// --device-cache-mib: as given; auto = the whole table where it takes at most half of the free
// memory, else that half; the whole table where free memory is unknown.
TEST(DeviceCacheBudget, GivenOrTheWholeTableOrHalfTheFreeMemory) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  EXPECT_EQ(DeviceCacheBudget(1, 500 * kMiB, 80000 * kMiB), 1 * kMiB);
  EXPECT_EQ(DeviceCacheBudget(0, 500 * kMiB, 80000 * kMiB), 0);
  EXPECT_EQ(DeviceCacheBudget(-1, 500 * kMiB, 80000 * kMiB), 500 * kMiB);
  EXPECT_EQ(DeviceCacheBudget(-1, 500 * kMiB, 1000 * kMiB), 500 * kMiB);
  EXPECT_EQ(DeviceCacheBudget(-1, 500 * kMiB, 999 * kMiB), 499 * kMiB + kMiB / 2);
  EXPECT_EQ(DeviceCacheBudget(-1, 500 * kMiB, absl::nullopt), 500 * kMiB);
  EXPECT_EQ(DeviceCacheBudget(std::numeric_limits<int64_t>::max(), 1, absl::nullopt),
            std::numeric_limits<int64_t>::max());
}

// --host-cache-mib: as given; auto = a quarter of the available host memory over the host's
// trainers, none with --host-tier none or where the available memory is unknown.
TEST(HostCacheBudget, GivenOrAQuarterOfTheHostsMemoryPerTrainer) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  EXPECT_EQ(HostCacheBudget(3, HostTier::kLocal, 8000 * kMiB, 1), 3 * kMiB);
  EXPECT_EQ(HostCacheBudget(3, HostTier::kNone, 8000 * kMiB, 1), 3 * kMiB);  // asked for
  EXPECT_EQ(HostCacheBudget(0, HostTier::kLocal, 8000 * kMiB, 1), 0);
  EXPECT_EQ(HostCacheBudget(-1, HostTier::kLocal, 8000 * kMiB, 1), 2000 * kMiB);
  EXPECT_EQ(HostCacheBudget(-1, HostTier::kLocal, 8000 * kMiB, 4), 500 * kMiB);
  EXPECT_EQ(HostCacheBudget(-1, HostTier::kLocal, 8000 * kMiB, 0), 2000 * kMiB);
  EXPECT_EQ(HostCacheBudget(-1, HostTier::kNone, 8000 * kMiB, 1), 0);
  EXPECT_EQ(HostCacheBudget(-1, HostTier::kLocal, absl::nullopt, 1), 0);
  EXPECT_EQ(HostCacheBudget(std::numeric_limits<int64_t>::max(), HostTier::kLocal, 1, 1),
            std::numeric_limits<int64_t>::max());
}

// --device-tier: shared when asked on a GPU; auto only where the table is over one GPU's
// budget and a 1 / trainers_on_host share fits it; never on a CPU or with own.
TEST(WantSharedDeviceTier, AskedOrAutoWhereOnlyAShareFits) {
  EXPECT_TRUE(WantSharedDeviceTier(DeviceTier::kShared, true, 1, 100, 1000));
  EXPECT_FALSE(WantSharedDeviceTier(DeviceTier::kShared, false, 2, 100, 10));
  EXPECT_FALSE(WantSharedDeviceTier(DeviceTier::kOwn, true, 2, 100, 50));
  EXPECT_FALSE(WantSharedDeviceTier(DeviceTier::kAuto, true, 2, 100, 100));  // the table fits
  EXPECT_TRUE(WantSharedDeviceTier(DeviceTier::kAuto, true, 2, 100, 50));    // half fits
  EXPECT_FALSE(WantSharedDeviceTier(DeviceTier::kAuto, true, 2, 101, 50));   // 51 does not
  EXPECT_TRUE(WantSharedDeviceTier(DeviceTier::kAuto, true, 4, 101, 26));
  EXPECT_FALSE(WantSharedDeviceTier(DeviceTier::kAuto, true, 1, 100, 50));   // one GPU
  EXPECT_FALSE(WantSharedDeviceTier(DeviceTier::kAuto, false, 2, 100, 50));  // CPU trainers
}

// The GPU sampler's topology on the GPU: int64 offsets per node and one more, int32 sources.
TEST(TopologyDeviceBytes, EightPerNodeAndOneFourPerEdgeSaturating) {
  EXPECT_EQ(TopologyDeviceBytes(2, 3), 8 * 3 + 4 * 3);
  EXPECT_EQ(TopologyDeviceBytes(0, 0), 8);
  EXPECT_EQ(TopologyDeviceBytes(std::numeric_limits<int64_t>::max() / 2, 0),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(TopologyDeviceBytes(1, std::numeric_limits<int64_t>::max()),
            std::numeric_limits<int64_t>::max());
}

// --sampler auto where the GPU sampler applies: gpu while the topology takes at most half of the
// GPU memory beside the device tier (whether it holds every row or a capped share of them) and
// the host's readers at most half of its available memory; unknown free GPU memory or
// int32-overflowing ids: server. Each answer says why.
TEST(ResolveAutoSampler, GpuWhereTheTopologyFitsBesideTheDeviceTier) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  const int64_t nodes = 1000, edges = 1000000;
  const int64_t topology = TopologyDeviceBytes(nodes, edges);
  const int64_t tier = 10 * kMiB;
  AutoSamplerInputs in{.num_nodes = nodes,
                       .num_edges = edges,
                       .free_device_bytes = tier + 2 * topology,
                       .device_tier_bytes = tier};
  SamplerChoice c = ResolveAutoSampler(in);
  EXPECT_EQ(c.sampler, Sampler::kGpu) << c.why;
  EXPECT_NE(c.why.find("fits"), std::string::npos) << c.why;
  in.free_device_bytes = tier + 2 * topology - 2;
  c = ResolveAutoSampler(in);
  EXPECT_EQ(c.sampler, Sampler::kServer);
  EXPECT_NE(c.why.find("more than half"), std::string::npos) << c.why;
  in.free_device_bytes = tier / 2;  // the tier over the free memory
  EXPECT_EQ(ResolveAutoSampler(in).sampler, Sampler::kServer);
  in.free_device_bytes = absl::nullopt;
  c = ResolveAutoSampler(in);
  EXPECT_EQ(c.sampler, Sampler::kServer);
  EXPECT_NE(c.why.find("free memory"), std::string::npos) << c.why;
  // Host memory: 1.25x the topology per trainer of the host, within half of what is available.
  in.free_device_bytes = 100 * kMiB;
  in.trainers_on_host = 2;
  in.available_host_bytes = static_cast<int64_t>(2 * 1.25 * static_cast<double>(topology) * 2);
  c = ResolveAutoSampler(in);
  EXPECT_EQ(c.sampler, Sampler::kGpu) << c.why;
  *in.available_host_bytes -= 1000;
  c = ResolveAutoSampler(in);
  EXPECT_EQ(c.sampler, Sampler::kServer);
  EXPECT_NE(c.why.find("host memory for 2 trainer"), std::string::npos) << c.why;
  c = ResolveAutoSampler(
      {.num_nodes = std::numeric_limits<int32_t>::max(), .free_device_bytes = int64_t{1} << 50});
  EXPECT_EQ(c.sampler, Sampler::kServer);
  EXPECT_NE(c.why.find("int32"), std::string::npos) << c.why;
}

// --sampler-topology host: only the offsets and the sampler's tables must fit beside the tier
// on the GPU, so a topology larger than that memory is still sampled on the GPU; the host's
// memory rule is the same. The answer says where the topology is. With device (the default),
// the topology's own size must fit.
TEST(ResolveAutoSampler, TheTopologyInHostMemoryNeedsOnlyItsOffsetsAndTablesOnTheGpu) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  const int64_t nodes = 1000, edges = 1000000;
  const int64_t tier = 10 * kMiB, tables = SamplerTableBytes(nodes) + 8 * (nodes + 1);
  EXPECT_EQ(SamplerTableBytes(nodes), 16 * nodes);
  AutoSamplerInputs in{.num_nodes = nodes,
                       .num_edges = edges,
                       .free_device_bytes = tier + 2 * tables,
                       .device_tier_bytes = tier,
                       .topology = SamplerTopology::kHost};
  ASSERT_LT(2 * tables, TopologyDeviceBytes(nodes, edges));
  SamplerChoice c = ResolveAutoSampler(in);
  EXPECT_EQ(c.sampler, Sampler::kGpu) << c.why;
  EXPECT_NE(c.why.find("in page-locked host memory (--sampler-topology host)"), std::string::npos)
      << c.why;
  in.free_device_bytes = tier + 2 * tables - 2;
  c = ResolveAutoSampler(in);
  EXPECT_EQ(c.sampler, Sampler::kServer);
  EXPECT_NE(c.why.find("offsets and the sampler's tables"), std::string::npos) << c.why;
  in.free_device_bytes = int64_t{1} << 40;
  in.available_host_bytes = static_cast<int64_t>(2 * 1.25 * 4e6);  // ~the topology's bytes
  c = ResolveAutoSampler(in);
  EXPECT_EQ(c.sampler, Sampler::kServer) << c.why;
  EXPECT_NE(c.why.find("host memory"), std::string::npos) << c.why;
  in.available_host_bytes = absl::nullopt;
  in.topology = SamplerTopology::kDevice;
  in.free_device_bytes = tier + 2 * tables;
  c = ResolveAutoSampler(in);
  EXPECT_EQ(c.sampler, Sampler::kServer) << c.why;
  EXPECT_NE(c.why.find("for the topology"), std::string::npos) << c.why;
}

// --sampler-topology: device by default; host needs a GPU sampler that can run.
TEST(ParseTrainerOptions, SamplerTopologyParsesAndNeedsTheGpuSampler) {
  EXPECT_EQ(Parse({"--registry", "r"}).value().sampler_topology, SamplerTopology::kDevice);
  absl::StatusOr<TrainerOptions> o =
      Parse({"--registry", "r", "--device", "cuda", "--sampler-topology", "host"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->sampler_topology, SamplerTopology::kHost);
  for (const std::vector<const char*>& args : std::vector<std::vector<const char*>>{
           {"--registry", "r", "--device", "cuda", "--sampler", "server", "--sampler-topology",
            "host"},
           {"--registry", "r", "--device", "cpu", "--sampler-topology", "host"}}) {
    o = Parse(args);
    ASSERT_FALSE(o.ok());
    EXPECT_NE(o.status().message().find("--sampler-topology"), absl::string_view::npos)
        << o.status();
  }
  o = Parse({"--registry", "r", "--device", "cuda", "--sampler-topology", "disk"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("sampler-topology"), absl::string_view::npos) << o.status();
}

// --prefetch auto (the default): 4 batches ahead where the servers sample, 2 where the GPU does
// (each one ahead holds its rows in GPU memory); a number is taken as given, either way.
TEST(ResolvePrefetch, AutoHoldsFewerAheadWhereTheGpuSamples) {
  EXPECT_EQ(Parse({"--registry", "r", "--prefetch", "auto"}).value().prefetch, 0);
  const int automatic = Parse({"--registry", "r"}).value().prefetch;
  EXPECT_EQ(ResolvePrefetch(automatic, /*gpu_sampled=*/false), 4);
  EXPECT_EQ(ResolvePrefetch(automatic, /*gpu_sampled=*/true), 2);
  const int given = Parse({"--registry", "r", "--prefetch", "6"}).value().prefetch;
  EXPECT_EQ(ResolvePrefetch(given, false), 6);
  EXPECT_EQ(ResolvePrefetch(given, true), 6);
  EXPECT_EQ(Parse({"--registry", "r", "--prefetch", "1000"}).value().prefetch, kMaxPrefetch);
}

// --sampler: auto by default; auto is accepted wherever the trainer resolves it (the GPU
// sampler's own conditions are checked only for an explicit gpu).
TEST(ParseTrainerOptions, SamplerAutoByDefaultAndAcceptedAnywhere) {
  EXPECT_EQ(Parse({"--registry", "r"}).value().sampler, Sampler::kAuto);
  EXPECT_EQ(Parse({"--registry", "r", "--sampler", "server"}).value().sampler, Sampler::kServer);
  for (const std::vector<const char*>& args : std::vector<std::vector<const char*>>{
           {"--registry", "r", "--sampler", "auto"},
           {"--registry", "r", "--sampler", "auto", "--device", "cuda", "--task", "link"},
           {"--registry", "r", "--sampler", "auto", "--device", "cuda", "--temporal"},
           {"--registry", "r", "--sampler", "auto", "--device", "cuda", "--feature-store",
            "server"}}) {
    absl::StatusOr<TrainerOptions> o = Parse(args);
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->sampler, Sampler::kAuto);
  }
}

TEST(ParseTrainerOptions, DeviceTierParsesAndNeedsTheTieredStore) {
  EXPECT_EQ(Parse({"--registry", "/tmp/reg"}).value().device_tier, DeviceTier::kAuto);
  EXPECT_EQ(Parse({"--registry", "/tmp/reg", "--device-tier", "shared"}).value().device_tier,
            DeviceTier::kShared);
  EXPECT_EQ(Parse({"--registry", "/tmp/reg", "--device-tier", "own"}).value().device_tier,
            DeviceTier::kOwn);
  absl::StatusOr<TrainerOptions> bad = Parse({"--registry", "/tmp/reg", "--device-tier", "peers"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--device-tier"), absl::string_view::npos);
  bad = Parse({"--registry", "/tmp/reg", "--feature-store", "server", "--device-tier", "shared"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--device-tier sets the tiered feature store"),
            absl::string_view::npos)
      << bad.status();
}

TEST(FeatureTableBytes, CountsEveryTypesRowsInTheDtypeAndSaturates) {
  ServerMetadata md;
  md.node_types.push_back({.name = "paper", .num_nodes = 1000, .feat_dim = 128});
  md.node_types.push_back({.name = "author", .num_nodes = 50, .feat_dim = 0});
  md.node_types.push_back({.name = "field", .num_nodes = 10, .feat_dim = 4});
  EXPECT_EQ(FeatureTableBytes(md, FeatureDtype::kFloat32), (1000 * 128 + 10 * 4) * 4);
  EXPECT_EQ(FeatureTableBytes(md, FeatureDtype::kBFloat16), (1000 * 128 + 10 * 4) * 2);
  md.node_types.push_back(
      {.name = "huge", .num_nodes = std::numeric_limits<int64_t>::max() / 2, .feat_dim = 3});
  EXPECT_EQ(FeatureTableBytes(md, FeatureDtype::kFloat16), std::numeric_limits<int64_t>::max());
}

TEST(ParseTrainerOptions, HelpIsCancelledWithUsage) {
  absl::StatusOr<TrainerOptions> o = Parse({"--help"});
  ASSERT_EQ(o.status().code(), absl::StatusCode::kCancelled);
  EXPECT_NE(o.status().message().find("usage:"), absl::string_view::npos);
}

// --help lists every task's default of the per-task flags.
TEST(ParseTrainerOptions, HelpShowsThePerTaskDefaults) {
  const std::string usage(Parse({"--help"}).status().message());
  for (const char* want :
       {"(default: node 64; link 128; graph 32)", "(default: node 10,5; link 10,10)",
        "(default: node 256; link 128; graph 32)", "(default: node 0.01; link 0.01; graph 0.01)",
        "(default: node 0.0005; link 0; graph 0)", "(default: node 0.5; link 0.3; graph 0.2)",
        "(default: node false; link true; graph false)"}) {
    EXPECT_NE(usage.find(want), std::string::npos) << want << " in\n" << usage;
  }
}

}  // namespace
}  // namespace graphshard::client
