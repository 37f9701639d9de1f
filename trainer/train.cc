// The run, epoch by epoch: session, epoch loop and report put together. No Torch here but its
// exception type, caught at this boundary.
#include "trainer/train.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/optional.h"
#include "client/communicator.h"
#include "client/config_fingerprint.h"
#include "client/device_share.h"
#include "client/feature_rows.h"
#include "client/rendezvous.h"
#include "client/shards.h"
#include "client/task.h"
#include "common/status_macros.h"
#include "shm/ring.h"
#include "trainer/device_tier_group.h"
#include "trainer/epoch_loop.h"
#include "trainer/gpu_memory.h"
#include "trainer/gpu_sample_kernel.h"
#include "trainer/host_register.h"
#include "trainer/inference.h"
#include "trainer/session.h"

namespace graphshard::trainer {
namespace {

using Clock = std::chrono::steady_clock;

void LogShards(std::ostream& log, int rank, const client::ServerMetadata& md,
               const client::Shards& shards, const DeviceChoice& device,
               const client::Communicator& comm) {
  log << absl::StrFormat(
      "rank %d: %d parts, target '%s' (%d node types, %d edge types), feat_dim %d, %d classes; "
      "seeds train %d val %d test %d from parts",
      rank, md.num_parts, md.target_type, md.node_types.size(), md.edge_types.size(), md.feat_dim,
      md.num_classes, client::TotalSeeds(shards.train), client::TotalSeeds(shards.val),
      client::TotalSeeds(shards.test));
  for (const client::ShardSeeds& s : shards.train) log << " " << s.part;
  log << "; device " << device.name << ", " << comm.name() << "\n";
  if (client::TotalSeeds(shards.train) == 0) {
    log << "rank " << rank << ": warning: no training seeds; contributing zero gradients\n";
  }
}

// Evaluates val and test every --eval-every epochs and after the last.
bool EvaluationDue(const client::TrainerOptions& o, int64_t epoch) {
  return o.eval_every > 0 && (epoch % o.eval_every == 0 || epoch == o.epochs);
}

// Where the run starts: --resume's checkpoint, else epoch 1, step 0.
absl::StatusOr<CheckpointPosition> StartPosition(const client::TrainerOptions& options,
                                                 Session& session, int rank, std::ostream& log) {
  CheckpointPosition start;
  if (!options.resume) return start;
  ASSIGN_OR_RETURN(absl::optional<CheckpointPosition> loaded, session.Resume());
  if (loaded.has_value()) {
    start = *loaded;
    log << absl::StrFormat("rank %d: resuming from %s at epoch %d step %d\n", rank,
                           CheckpointPath(options.checkpoint_dir), start.epoch, start.step);
  } else {
    log << "rank " << rank << ": no checkpoint in " << options.checkpoint_dir
        << "; starting from scratch\n";
  }
  return start;
}

// What --eval full needs besides the epoch loop: the servers, the collectives, the log.
struct FullEval {
  client::ServerSet& servers;
  client::Communicator& comm;
  std::ostream& log;
};

// One epoch from `first_step`: training, its reductions, evaluation when due, its report.
absl::Status RunEpoch(const client::TrainerOptions& options, int64_t epoch, int64_t first_step,
                      const TrainingSums& carried, const client::Shards& shards, EpochLoop& loop,
                      Session& session, client::RunReport& report, const FullEval& full) {
  ASSIGN_OR_RETURN(const EpochResult trained, loop.Train(epoch, first_step, carried));
  client::EpochReport r;
  r.epoch = epoch;
  RETURN_IF_ERROR(report.ReduceEpoch(trained.local, r));
  client::RunReport::SetTraining(trained.sums.loss_sum, trained.sums.correct, trained.sums.seen, r);
  const auto eval_start = Clock::now();
  if (EvaluationDue(options, epoch) && options.eval == client::EvalMode::kFull) {
    // Full-graph inference (inference.h): every node over its whole neighbourhood, so the
    // accuracy of every val and test node, exactly. Its counts are over all ranks already.
    ASSIGN_OR_RETURN(
        const InferenceResult inferred,
        InferFullGraph(options, full.servers, full.comm, session, shards.shares, "", full.log));
    const double own = full.comm.rank() == 0 ? 1.0 : 0.0;
    RETURN_IF_ERROR(report.ReduceEvaluation(own * inferred.val_correct, own * inferred.val_total,
                                            own * inferred.test_correct, own * inferred.test_total,
                                            r));
  } else if (EvaluationDue(options, epoch)) {
    ASSIGN_OR_RETURN(EvalCounts val, loop.Evaluate(shards.val, epoch));
    ASSIGN_OR_RETURN(EvalCounts test, loop.Evaluate(shards.test, epoch));
    if (options.task == client::Task::kLink) {
      RETURN_IF_ERROR(report.ReduceLinkEvaluation(val.link, test.link, options.link.hits_k, r));
    } else {
      RETURN_IF_ERROR(report.ReduceEvaluation(val.correct, val.total, test.correct, test.total, r));
    }
  }
  r.eval_s = std::chrono::duration<double>(Clock::now() - eval_start).count();
  r.global_step = session.global_step();
  return report.EndEpoch(r, trained.local);
}

// MemAvailable of /proc/meminfo (what the kernel can give without swapping); nullopt where it
// cannot be read.
absl::optional<int64_t> AvailableHostMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return absl::nullopt;
}

// --sampler auto on a GPU: this rank samples its training batches on its GPU where the GPU
// sampler can take the run (a node task without --temporal on a homogeneous graph, the rows on
// the GPU: `rows_on_gpu`, a build with its kernels) and client::ResolveAutoSampler says so
// (`fit`: the topology's size against the memory beside the device tier; the host's memory is
// filled in here); every rank alike (collective where the rows are on the GPU: an
// all-reduce, as every rank resolves the store alike). The log says which and why. With
// --sampler gpu, and auto where it chose the GPU, --sampler-topology says where the topology
// is kept.
absl::Status ChooseSampler(const client::TrainerOptions& options, const DeviceChoice& device,
                           bool rows_on_gpu, client::AutoSamplerInputs fit,
                           client::Communicator& comm, EpochLoop& loop, std::ostream& log) {
  if (!device.cuda || options.sampler == client::Sampler::kServer) return absl::OkStatus();
  const bool on_host = options.sampler_topology == client::SamplerTopology::kHost;
  if (options.sampler == client::Sampler::kGpu) {
    loop.UseGpuSampler(true, on_host);
    return absl::OkStatus();
  }
  fit.topology = options.sampler_topology;
  const absl::Status applies = loop.GpuSamplerApplies();
  client::SamplerChoice choice;
  if (!rows_on_gpu) {
    choice.why = "the feature rows come with the batches";
  } else if (options.task != client::Task::kNode || options.temporal || !applies.ok()) {
    choice.why = "the GPU sampler draws node-task batches of homogeneous graphs without --temporal";
  } else if (!GpuSampleKernelsBuilt()) {
    choice.why = "this build has no CUDA kernels for sampling";
  } else {
    fit.available_host_bytes = AvailableHostMemoryBytes();
    choice = client::ResolveAutoSampler(fit);
  }
  if (rows_on_gpu) {
    int64_t want[1] = {choice.sampler == client::Sampler::kGpu ? 1 : 0};
    RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(want), client::ReduceOp::kSum));
    if (want[0] != comm.world_size() && choice.sampler == client::Sampler::kGpu) {
      choice = {client::Sampler::kServer, "another rank cannot (its log says why)"};
    }
  }
  const bool gpu = choice.sampler == client::Sampler::kGpu;
  loop.UseGpuSampler(gpu, on_host);
  log << "rank " << comm.rank() << ": training batches sampled "
      << (gpu ? "on " + device.name : std::string("by the servers"))
      << " (--sampler auto: " << choice.why << ")\n";
  return absl::OkStatus();
}

// --feature-store: loads the tiered feature store where asked (device) or on a GPU (auto,
// ResolveTieredFeatureStore), its device tier within --device-cache-mib (DeviceCacheBudget),
// its host cache within --host-cache-mib (HostCacheBudget; `trainers_on_host` share the
// host's memory), and says what each tier holds. With --device-tier auto, a shared device tier
// whose share does not fit on some GPU becomes a device tier per GPU on every rank; with
// --feature-store auto, a tier that turns out not to fit (ResourceExhausted) leaves the rows with
// the batches, and the log says so. Resolves --sampler auto before the load (ChooseSampler;
// `num_edges`: the graph's), so that the GPU sampler's topology is read beside the rows.
absl::Status PlaceFeatureRows(const client::TrainerOptions& options,
                              const client::ServerMetadata& md, int64_t num_edges,
                              const DeviceChoice& device, client::Communicator& comm,
                              const std::vector<std::string>& rank_hosts, int trainers_on_host,
                              EpochLoop& loop, std::ostream& log) {
  const int rank = comm.rank();
  const int64_t table_bytes = client::FeatureTableBytes(md, options.feature_dtype);
  const client::FeatureStoreKind kind = client::ResolveTieredFeatureStore(
      options.feature_store, options.task, device.cuda, table_bytes);
  const auto mib = [](int64_t b) { return static_cast<double>(b) / (1 << 20); };
  if (options.device_tier == client::DeviceTier::kShared &&
      (!device.cuda || kind != client::FeatureStoreKind::kDevice)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--device-tier shared: needs GPU trainers with the tiered store (--feature-store device "
        "or auto); this one trains on ",
        device.name, " with the rows ",
        kind == client::FeatureStoreKind::kDevice ? "in its store" : "in the batches"));
  }
  if (kind != client::FeatureStoreKind::kDevice) {
    if (options.feature_store == client::FeatureStoreKind::kAuto) {
      log << "rank " << rank << ": feature rows come with each batch (--feature-store auto: "
          << (device.cuda ? "no feature rows" : "not a GPU") << ")\n";
    }
    return ChooseSampler(options, device, /*rows_on_gpu=*/false, {}, comm, loop, log);
  }
  const absl::optional<int64_t> free_bytes =
      device.cuda ? FreeGpuMemoryBytes(device.index) : absl::nullopt;
  const int64_t budget =
      client::DeviceCacheBudget(options.device_cache_mib, table_bytes, free_bytes);
  const int64_t host_cache = client::HostCacheBudget(options.host_cache_mib, options.host_tier,
                                                     AvailableHostMemoryBytes(), trainers_on_host);
  // --device-tier: the host's GPUs hold one device tier together where every rank asks for it
  // and every GPU reaches its host's others.
  int64_t want[1] = {client::WantSharedDeviceTier(options.device_tier, device.cuda,
                                                  trainers_on_host, table_bytes, budget)
                         ? 1
                         : 0};
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(want), client::ReduceOp::kSum));
  absl::optional<DeviceTierGroup> group;
  if (want[0] == comm.world_size()) {
    ASSIGN_OR_RETURN(DeviceTierGroup g, FindDeviceTierGroup(comm, rank_hosts, device.index));
    if (g.ok) {
      group = std::move(g);
    } else if (options.device_tier == client::DeviceTier::kShared) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--device-tier shared: ",
          g.why_not.empty() ? "another rank's GPU cannot reach its host's others (its log says why)"
                            : g.why_not));
    } else {
      log << "rank " << rank << ": each GPU holds its own device tier (--device-tier auto: "
          << (g.why_not.empty() ? "another rank's GPU cannot reach its host's others" : g.why_not)
          << ")\n";
    }
  }
  RETURN_IF_ERROR(ChooseSampler(options, device, /*rows_on_gpu=*/true,
                                {.num_nodes = md.num_nodes,
                                 .num_edges = num_edges,
                                 .free_device_bytes = free_bytes,
                                 .device_tier_bytes = std::min(budget, table_bytes),
                                 .trainers_on_host = trainers_on_host},
                                comm, loop, log));
  const absl::Time load_start = absl::Now();
  absl::StatusOr<client::FeatureStoreLayout> layout =
      loop.LoadFeatureStore(budget, host_cache, group ? &*group : nullptr);
  if (group && !layout.ok() && options.device_tier == client::DeviceTier::kAuto &&
      absl::IsResourceExhausted(layout.status())) {
    // A share that did not fit fails every rank alike (client/device_share.h): all of them
    // hold a device tier of their own instead.
    log << "rank " << rank
        << ": each GPU holds its own device tier (--device-tier auto: " << layout.status().message()
        << ")\n";
    layout = loop.LoadFeatureStore(budget, host_cache, nullptr);
  }
  if (!layout.ok() && options.feature_store == client::FeatureStoreKind::kAuto &&
      absl::IsResourceExhausted(layout.status())) {
    log << "rank " << rank << ": feature rows come with each batch (--feature-store auto): "
        << layout.status().message() << "\n";
    loop.SampleOnServersAfterAll("the rows are not on the GPU");
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(layout.status());
  const client::FeatureStoreLayout& l = *layout;
  if (l.shared_by_gpus > 0) {
    int64_t rows_with_features = 0;
    for (const client::NodeTypeInfo& t : md.node_types) {
      if (t.feat_dim > 0) rows_with_features += t.num_nodes;
    }
    log << absl::StrFormat(
        "rank %d feature store (%.1f MiB of rows, %.2f s to load): device tier shared by the "
        "host's %d GPUs (--device-tier), %s holds %.1f MiB, %.1f%% of rows; the others' read "
        "over peer access (shares made with %s)\n",
        rank, mib(table_bytes), absl::ToDoubleSeconds(absl::Now() - load_start), l.shared_by_gpus,
        device.name, mib(l.device_bytes),
        100 * static_cast<double>(l.device_rows) /
            static_cast<double>(std::max<int64_t>(1, rows_with_features)),
        client::WantVmmShares(client::ProcessEnv()).value_or(true)
            ? "CUDA's VMM API"
            : "CUDA IPC, GRAPHSHARD_SHARED_TIER_EXPORT=ipc");
    return absl::OkStatus();
  }
  const double rows =
      static_cast<double>(std::max<int64_t>(1, l.device_rows + l.host_rows + l.remote_rows));
  log << absl::StrFormat(
      "rank %d feature store (%.1f MiB of rows, %.2f s to load%s): device %s %.1f MiB, %.1f%% "
      "of rows, %.1f%% of the pre-sampled visits; host %.1f MiB, %.1f%% of rows%s%s; remote "
      "%.1f%% of rows\n",
      rank, mib(table_bytes), absl::ToDoubleSeconds(absl::Now() - load_start),
      free_bytes ? absl::StrFormat(", %.0f MiB free on %s", mib(*free_bytes), device.name)
                 : std::string(),
      device.name, mib(l.device_bytes), 100 * static_cast<double>(l.device_rows) / rows,
      100 * l.expected_device_hit_rate, mib(l.host_bytes),
      100 * static_cast<double>(l.host_rows) / rows,
      l.host_zero_copy       ? " (read by the GPU in place)"
      : !l.host_note.empty() ? " (copied per batch: " + l.host_note + ")"
                             : "",
      l.host_cached_rows > 0 ? absl::StrFormat(", of them %.1f%% of rows other hosts' (host cache)",
                                               100 * static_cast<double>(l.host_cached_rows) / rows)
                             : std::string(),
      100 * static_cast<double>(l.remote_rows) / rows);
  return absl::OkStatus();
}

// --static-shapes on: switched on in the loop; refused, naming why, where it does not apply.
absl::Status UseStaticShapes(const client::TrainerOptions& options,
                             const client::ServerMetadata& md, const DeviceChoice& device, int rank,
                             EpochLoop& loop, std::ostream& log) {
  if (options.static_shapes != client::StaticShapes::kOn) return absl::OkStatus();
  const std::string why = client::StaticShapesUnsupported(options.task, md.heterogeneous());
  if (!why.empty()) return absl::InvalidArgumentError("--static-shapes on: " + why);
  RETURN_IF_ERROR(loop.EnableStaticShapes());
  log << "rank " << rank
      << ": static shapes: training batches padded to per-hop capacities that only grow"
      << (device.cuda ? "; the step's forward and backward pass replayed as a CUDA graph" : "")
      << "\n";
  return absl::OkStatus();
}

absl::StatusOr<client::TrainSummary> RunTrainingImpl(const client::TrainerOptions& options,
                                                     client::ServerSet& servers,
                                                     client::Communicator& comm, std::ostream& out,
                                                     std::ostream& log, const RunEnvironment& env) {
  const client::ServerMetadata& md = servers.metadata;
  const int rank = comm.rank();
  ASSIGN_OR_RETURN(const DeviceChoice device, PickDevice(options, env.local_rank));
  if (device.cuda && options.h2d == client::H2dMode::kRegistered) {
    servers.directory->SetRingMapHooks(CudaHostRegisterHooks());
  }
  RETURN_IF_ERROR(client::CheckTaskData(options, md));
  ASSIGN_OR_RETURN(const client::TaskPlan plan, client::PlanTaskFor(options, md));
  ASSIGN_OR_RETURN(const std::vector<std::string> rank_hosts,
                   client::AllGatherStrings(comm, shm::HostId()));
  ASSIGN_OR_RETURN(
      const client::Shards shards,
      client::LoadShards(servers, rank, rank_hosts, plan.link_edge_type, options.assignment));
  LogShards(log, rank, md, shards, device, comm);
  for (const client::ServerShare& s : shards.shares) {
    const auto part = static_cast<size_t>(s.part);
    log << absl::StrFormat("rank %d reads part %d (chunk %d of %d) at %s (host %s)\n", rank, s.part,
                           s.chunk, s.num_chunks, servers.clients[part]->address(),
                           servers.host_ids[part]);
  }

  ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                   Session::Create(options, device, md, plan.num_layers, comm,
                                   client::ConfigFingerprint(options, comm.world_size())));
  if (options.eval == client::EvalMode::kFull)
    RETURN_IF_ERROR(CheckInferable(options, md, *session));
  ASSIGN_OR_RETURN(const CheckpointPosition start, StartPosition(options, *session, rank, log));
  ASSIGN_OR_RETURN(std::unique_ptr<client::RunReport> report,
                   client::RunReport::Create(options, comm, out, log, env.log_is_terminal,
                                             {.config = session->config(),
                                              .device = device.name,
                                              .start_epoch = start.epoch,
                                              .start_step = start.step}));

  EpochLoop loop(options, plan, servers, comm, *session, shards, report->progress());
  if (!options.profile_dir.empty()) RETURN_IF_ERROR(loop.EnableProfiler(options.profile_dir));
  const int trainers_on_host = static_cast<int>(
      std::count(rank_hosts.begin(), rank_hosts.end(), rank_hosts[static_cast<size_t>(rank)]));
  RETURN_IF_ERROR(PlaceFeatureRows(options, md, servers.num_edges, device, comm, rank_hosts,
                                   trainers_on_host, loop, log));
  RETURN_IF_ERROR(UseStaticShapes(options, md, device, rank, loop, log));
  for (int64_t epoch = start.epoch; epoch <= options.epochs; ++epoch) {
    const int64_t first_step = epoch == start.epoch ? start.step : 0;
    TrainingSums carried;  // rank 0 carries the sums of a resumed epoch's first steps
    if (first_step > 0 && rank == 0) {
      carried = {.loss_sum = start.loss_sum, .correct = start.correct, .seen = start.seen};
    }
    RETURN_IF_ERROR(RunEpoch(options, epoch, first_step, carried, shards, loop, *session, *report,
                             FullEval{servers, comm, log}));
    if (!options.checkpoint_dir.empty() && rank == 0) {
      RETURN_IF_ERROR(session->Save({.epoch = epoch + 1, .step = 0}));
    }
  }
  return report->Finish(session->WeightsFingerprint());
}

}  // namespace

absl::StatusOr<client::TrainSummary> RunTraining(const client::TrainerOptions& options,
                                                 client::ServerSet& servers,
                                                 client::Communicator& comm, std::ostream& out,
                                                 std::ostream& log, const RunEnvironment& env) {
  try {
    return RunTrainingImpl(options, servers, comm, out, log, env);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("torch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("training: ", e.what()));
  }
}

}  // namespace graphshard::trainer
