#include "trainer/train.h"

#include <torch/torch.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "shm/ring.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "trainer/assignment.h"
#include "trainer/checkpoint.h"
#include "trainer/epoch_plan.h"
#include "trainer/graph_task.h"
#include "trainer/host_register.h"
#include "trainer/input_pipeline.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Shards {
  std::vector<ShardSeeds> train, val, test;
  // --task graph: every share's whole part of the train split, regrouped per epoch.
  std::vector<ServerShare> shares;
  std::vector<std::vector<int64_t>> train_parts;
};

// This epoch's training shards: fixed for node tasks; for graph tasks redrawn every epoch
// (EpochChunk, DistributedSampler-style).
std::vector<ShardSeeds> TrainShards(const Shards& shards, const TrainerOptions& o, int64_t epoch) {
  if (o.task != "graph") return shards.train;
  std::vector<ShardSeeds> out;
  for (size_t i = 0; i < shards.shares.size(); ++i) {
    out.push_back({shards.shares[i].part,
                   EpochChunk(shards.train_parts[i], shards.shares[i], o.seed, epoch)});
  }
  return out;
}

int64_t TotalSeeds(const std::vector<ShardSeeds>& shards) {
  int64_t n = 0;
  for (const ShardSeeds& s : shards) n += static_cast<int64_t>(s.ids.size());
  return n;
}

// This rank's share of each split (assignment.h), read from the servers that own them.
absl::StatusOr<Shards> LoadShards(ServerSet& servers, int rank, int world_size) {
  ASSIGN_OR_RETURN(std::vector<ServerShare> shares,
                   AssignServers(rank, world_size, servers.metadata.num_parts));
  Shards shards;
  shards.shares = shares;
  for (const ServerShare& share : shares) {
    PartitionClient& client = *servers.clients[static_cast<size_t>(share.part)];
    for (auto [name, out] : {std::pair{"train", &shards.train}, std::pair{"val", &shards.val},
                             std::pair{"test", &shards.test}}) {
      ASSIGN_OR_RETURN(std::vector<int64_t> ids, client.GetSplit(name));
      if (out == &shards.train) shards.train_parts.push_back(ids);
      absl::Span<const int64_t> chunk = ChunkOf(ids, share.chunk, share.num_chunks);
      out->push_back({share.part, std::vector<int64_t>(chunk.begin(), chunk.end())});
    }
  }
  return shards;
}

FeatureDtype ParseDtype(const std::string& s) {
  if (s == "float16") return FeatureDtype::kFloat16;
  if (s == "bfloat16") return FeatureDtype::kBFloat16;
  return FeatureDtype::kFloat32;
}

// Everything one run's passes share.
struct Run {
  const TrainerOptions& options;
  ServerSet& servers;
  Communicator& comm;
  std::ostream& log;
  torch::Device device;
  std::shared_ptr<GnnModelImpl> model;
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::Adam> optimizer;
  std::string host_id;
  std::string config;  // what a checkpoint must match
  std::unique_ptr<MetricsFile> metrics;
  std::unique_ptr<ProgressReporter> progress;
  int64_t global_step = 0;
  int64_t steps_this_process = 0;
};

enum class CollectiveOp { kQueuedSum, kBroadcast };

// In-place SUM (or broadcast from root 0) of a flat float tensor, through host memory when the
// communicator takes host buffers and the tensor is on a GPU. The sum may return before it is
// done (Communicator::QueueAllReduce): only work queued on the device after it may read `flat`.
absl::Status Collective(Communicator& comm, torch::Tensor& flat, CollectiveOp op) {
  if (comm.world_size() == 1) return absl::OkStatus();
  const bool via_host = comm.float_memory() == MemorySpace::kHost && !flat.is_cpu();
  torch::Tensor buf = via_host ? flat.to(torch::kCPU).contiguous() : flat.contiguous();
  absl::Span<float> span(buf.data_ptr<float>(), static_cast<size_t>(buf.numel()));
  switch (op) {
    case CollectiveOp::kQueuedSum:
      RETURN_IF_ERROR(comm.QueueAllReduce(span, ReduceOp::kSum));
      break;
    case CollectiveOp::kBroadcast:
      RETURN_IF_ERROR(comm.Broadcast(span, 0));
      break;
  }
  if (via_host || !buf.is_same(flat)) flat.copy_(buf);
  return absl::OkStatus();
}

// A pipeline over one stream per shard for `num_epochs` epochs from `epoch`; step_stream as
// scheduled (every epoch alike), from `first_step` of the first.
absl::StatusOr<std::unique_ptr<InputPipeline>> OpenPipeline(
    Run& run, const std::vector<ShardSeeds>& shards, const EpochSchedule& schedule,
    int64_t first_step, bool train, int64_t epoch, int64_t num_epochs = 1,
    int64_t pause_batches_per_epoch = 0) {
  std::vector<int64_t> first = BatchesBefore(schedule, first_step);
  std::vector<std::unique_ptr<BatchStream>> streams(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    if (schedule.stream_batches[i] * num_epochs <= first[i]) continue;
    StreamOptions so;
    so.seeds = shards[i].ids;
    so.batch_size = run.options.batch_size;
    so.shuffle = train;
    so.shuffle_seed = StreamShuffleSeed(run.options.seed, shards[i].part);
    so.epoch = epoch;
    so.first_batch = first[i];
    so.num_batches = schedule.stream_batches[i];
    so.num_epochs = num_epochs;
    so.pause_batches_per_epoch = pause_batches_per_epoch;
    so.fanouts = run.options.task == "graph" ? WholeGraphFanouts() : run.options.fanouts;
    so.replace = run.options.replace;
    so.feature_dtype = ParseDtype(run.options.feature_dtype);
    so.client_host_id = run.host_id;
    // The pipeline keeps `prefetch` steps ready, one being converted, the current step's and
    // possibly the previous one's (until the loop drops it); one spare.
    so.max_held_batches = run.options.prefetch + 4;
    ASSIGN_OR_RETURN(streams[i], run.servers.clients[static_cast<size_t>(shards[i].part)]
                                     ->StreamBatches(so, run.servers.metadata));
  }
  std::vector<int> steps(schedule.step_stream.begin() + first_step, schedule.step_stream.end());
  for (int64_t e = 1; e < num_epochs; ++e) {
    steps.insert(steps.end(), schedule.step_stream.begin(), schedule.step_stream.end());
  }
  PipelineOptions po;
  po.depth = run.options.prefetch;
  po.device = run.device;
  po.normalize_features = run.options.normalize_features;
  po.num_classes = run.servers.metadata.num_classes;
  return std::make_unique<InputPipeline>(std::move(streams), std::move(steps), po);
}

struct EvalCounts {
  double correct = 0;
  double total = 0;
};

// Every batch of this rank's shards of one split, in order, without dropout.
absl::StatusOr<EvalCounts> EvaluateSplit(Run& run, const std::vector<ShardSeeds>& shards,
                                         int64_t epoch) {
  std::vector<int64_t> natural;
  for (const ShardSeeds& s : shards) {
    natural.push_back(NaturalBatches(std::ssize(s.ids), run.options.batch_size));
  }
  EpochSchedule schedule;
  schedule.stream_batches = natural;
  for (size_t i = 0; i < natural.size(); ++i) {
    schedule.step_stream.insert(schedule.step_stream.end(), static_cast<size_t>(natural[i]),
                                static_cast<int>(i));
  }
  ASSIGN_OR_RETURN(auto pipeline, OpenPipeline(run, shards, schedule, 0, false, epoch));
  torch::NoGradGuard no_grad;
  run.model->eval();
  torch::Tensor correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(run.device));
  double total = 0;
  for (size_t s = 0; s < schedule.step_stream.size(); ++s) {
    ASSIGN_OR_RETURN(absl::optional<BatchTensors> batch, pipeline->Next());
    torch::Tensor logits = run.model->Forward(*batch);
    correct += logits.argmax(1).eq(batch->y).sum();
    total += static_cast<double>(batch->batch_size);
  }
  return EvalCounts{static_cast<double>(correct.item<int64_t>()), total};
}

struct EpochStats {
  double loss_sum = 0, correct = 0, seen = 0;  // global over ranks (incl. before a resume)
  int64_t steps = 0;
  double local_seeds = 0, local_time_s = 0, local_wait_s = 0;
  double local_allreduce_s = 0;  // gradient all-reduce calls (queueing it; waiting for the last)
  PipelineTimings pipeline;      // this rank's input pipeline
};

CheckpointPosition Position(const Run& run, int64_t epoch, int64_t step, const double sums[3]) {
  return {.epoch = epoch,
          .step = step,
          .global_step = run.global_step,
          .loss_sum = sums[0],
          .correct = sums[1],
          .seen = sums[2],
          .config = run.config};
}

// The training input of epochs [first_epoch, last_epoch]: one pipeline over one stream per shard
// across all of them, so the servers build the next epoch's first batches (and the pipeline
// copies them) while this epoch ends. Node tasks open it once for the whole run (their shards
// are the same every epoch); graph tasks, whose shards are redrawn every epoch, once per epoch.
struct TrainInput {
  int64_t last_epoch = 0;
  int64_t steps = 0;  // per epoch, the same on every rank
  std::unique_ptr<InputPipeline> pipeline;
};

// `eval_batches`: the batches of one evaluation, which the streams allow time for between
// epochs.
absl::StatusOr<TrainInput> OpenTrainInput(Run& run, const std::vector<ShardSeeds>& train,
                                          int64_t first_epoch, int64_t last_epoch,
                                          int64_t first_step, int64_t eval_batches) {
  std::vector<int64_t> natural;
  int64_t total = 0;
  for (const ShardSeeds& s : train) {
    natural.push_back(NaturalBatches(std::ssize(s.ids), run.options.batch_size));
    total += natural.back();
  }
  TrainInput input;
  input.last_epoch = last_epoch;
  input.steps = total;  // every rank runs the largest count
  RETURN_IF_ERROR(run.comm.AllReduce(absl::MakeSpan(&input.steps, 1), ReduceOp::kMax));
  if (input.steps == 0) {
    return absl::FailedPreconditionError("no trainer has any training seed (empty train split)");
  }
  const EpochSchedule schedule = ScheduleEpoch(natural, input.steps);
  ASSIGN_OR_RETURN(input.pipeline,
                   OpenPipeline(run, train, schedule, first_step, true, first_epoch,
                                last_epoch - first_epoch + 1, eval_batches));
  return input;
}

PipelineTimings Minus(PipelineTimings a, const PipelineTimings& b) {
  a.stream_wait_s -= b.stream_wait_s;
  a.stage_s -= b.stage_s;
  a.full_wait_s -= b.full_wait_s;
  a.batches -= b.batches;
  return a;
}

// Trains steps [first_step, input.steps) of one epoch. `carried` are the sums a checkpoint
// carried into this epoch (rank 0 only; zeros elsewhere).
absl::StatusOr<EpochStats> TrainEpoch(Run& run, TrainInput& input, int64_t epoch,
                                      int64_t first_step, const double carried[3]) {
  const TrainerOptions& o = run.options;
  const auto t0 = Clock::now();
  EpochStats st;
  st.steps = input.steps;
  InputPipeline* pipeline = input.pipeline.get();
  const PipelineTimings timings_before = pipeline->timings();
  const auto fopts = torch::TensorOptions().dtype(torch::kFloat64).device(run.device);
  torch::Tensor loss_acc = torch::zeros({}, fopts), correct_acc = torch::zeros({}, fopts);
  double seen = 0, wait_s = 0, allreduce_s = 0;
  run.model->train();
  if (run.progress) run.progress->StartEpoch(static_cast<int>(epoch), o.epochs, st.steps, first_step);
  for (int64_t s = first_step; s < st.steps; ++s) {
    const auto wait_start = Clock::now();
    ASSIGN_OR_RETURN(absl::optional<BatchTensors> batch, pipeline->Next());
    wait_s += SecondsSince(wait_start);
    torch::manual_seed(StepSeed(o.seed, epoch, run.comm.rank(), s));  // dropout, resumable
    run.optimizer->zero_grad();
    torch::Tensor loss;
    if (batch.has_value()) {  // a rank without seeds still joins the all-reduce, with zeros
      torch::Tensor logits = run.model->Forward(*batch);
      loss = torch::nn::functional::cross_entropy(logits, batch->y);
      loss.backward();
      const double bs = static_cast<double>(batch->batch_size);
      loss_acc += loss.detach().to(torch::kFloat64) * bs;
      correct_acc += logits.argmax(1).eq(batch->y).sum().to(torch::kFloat64);
      seen += bs;
    }
    if (run.comm.world_size() > 1) {
      const auto reduce_start = Clock::now();
      torch::Tensor grads = FlattenGradients(run.params);
      RETURN_IF_ERROR(Collective(run.comm, grads, CollectiveOp::kQueuedSum));
      grads.div_(run.comm.world_size());
      UnflattenIntoGradients(grads, run.params);
      allreduce_s += SecondsSince(reduce_start);
    }
    run.optimizer->step();
    ++run.global_step;
    ++run.steps_this_process;
    if (run.progress && loss.defined() && run.progress->Due(s)) {
      run.progress->Step(s, loss.item<double>(), seen);
    }
    const bool due = o.checkpoint_every > 0 && run.global_step % o.checkpoint_every == 0 &&
                     s + 1 < st.steps && !o.checkpoint_dir.empty();
    if (due) {
      double sums[3] = {loss_acc.item<double>(), correct_acc.item<double>(), seen};
      RETURN_IF_ERROR(run.comm.AllReduce(absl::MakeSpan(sums), ReduceOp::kSum));
      for (int i = 0; i < 3; ++i) sums[i] += carried[i];
      if (run.comm.rank() == 0) {
        RETURN_IF_ERROR(SaveCheckpoint(o.checkpoint_dir, *run.model, *run.optimizer,
                                       Position(run, epoch, s + 1, sums)));
      }
    }
    if (o.stop_after_steps > 0 && run.steps_this_process >= o.stop_after_steps) {
      return absl::AbortedError(
          absl::StrCat("stopped after ", run.steps_this_process, " steps (--stop-after-steps)"));
    }
  }
  if (run.progress) run.progress->EndEpoch();
  RETURN_IF_ERROR(run.comm.Flush());
  double sums[3] = {loss_acc.item<double>(), correct_acc.item<double>(), seen};
  RETURN_IF_ERROR(run.comm.AllReduce(absl::MakeSpan(sums), ReduceOp::kSum));
  st.loss_sum = sums[0] + carried[0];
  st.correct = sums[1] + carried[1];
  st.seen = sums[2] + carried[2];
  st.local_seeds = seen;
  st.local_time_s = SecondsSince(t0);
  st.local_wait_s = wait_s;
  st.local_allreduce_s = allreduce_s;
  st.pipeline = Minus(pipeline->timings(), timings_before);
  return st;
}

std::string Fingerprint(const std::vector<torch::Tensor>& params) {
  Fnv1a64 h;
  for (const torch::Tensor& p : params) {
    torch::Tensor c = p.detach().to(torch::kCPU).contiguous();
    h.Update(c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size());
  }
  return h.Hex();
}

std::string RunConfig(const TrainerOptions& o, int world_size) {
  return absl::StrCat("task=", o.task, " layers=", o.task == "graph" ? o.layers : 0,
                      " model=", o.model, " hidden=", o.hidden, " fanouts=",
                      absl::StrJoin(o.fanouts, ","), " batch=", o.batch_size, " seed=", o.seed,
                      " world=", world_size, " lr=", o.lr, " wd=", o.weight_decay,
                      " dropout=", o.dropout, " replace=", o.replace,
                      " dtype=", o.feature_dtype, " normalize=", o.normalize_features);
}

absl::StatusOr<torch::Device> PickDevice(const TrainerOptions& o, const RunEnvironment& env) {
  if (o.device != "cuda") return torch::Device(torch::kCPU);
  if (!torch::cuda::is_available()) {
    return absl::FailedPreconditionError(
        "--device cuda: no CUDA device (or this LibTorch has no CUDA)");
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % count));
}

absl::StatusOr<TrainSummary> RunTrainingImpl(const TrainerOptions& options, ServerSet& servers,
                                             Communicator& comm, std::ostream& out,
                                             std::ostream& log, const RunEnvironment& env) {
  torch::set_num_threads(options.threads);
  const ServerMetadata& md = servers.metadata;
  const int rank = comm.rank();
  ASSIGN_OR_RETURN(torch::Device device, PickDevice(options, env));
  absl::optional<c10::DeviceGuard> device_guard;
  if (device.is_cuda()) device_guard.emplace(device);
  if (device.is_cuda() && options.h2d == "registered") {
    for (auto& client : servers.clients) {
      if (client != nullptr) client->SetRingMapHooks(CudaHostRegisterHooks());
    }
  }
  if (options.task == "graph") {
    RETURN_IF_ERROR(FindGraphTask(md).status());
  } else if (IsGraphDataset(md)) {
    return absl::FailedPreconditionError(
        "this partition is a graph-classification (TU) dataset: pass --task graph");
  }
  ASSIGN_OR_RETURN(Shards shards, LoadShards(servers, rank, comm.world_size()));
  log << absl::StrFormat(
      "rank %d: %d parts, target '%s' (%d node types, %d edge types), feat_dim %d, %d classes; "
      "seeds train %d val %d test %d from parts",
      rank, md.num_parts, md.target_type, md.node_types.size(), md.edge_types.size(), md.feat_dim,
      md.num_classes, TotalSeeds(shards.train), TotalSeeds(shards.val), TotalSeeds(shards.test));
  for (const ShardSeeds& s : shards.train) log << " " << s.part;
  log << "; device " << device.str() << ", " << comm.name() << "\n";
  if (TotalSeeds(shards.train) == 0) {
    log << "rank " << rank << ": warning: no training seeds; contributing zero gradients\n";
  }

  Run run{.options = options,
          .servers = servers,
          .comm = comm,
          .log = log,
          .device = device,
          .model = nullptr,
          .params = {},
          .optimizer = nullptr,
          .host_id = shm::HostId(),
          .config = RunConfig(options, comm.world_size()),
          .metrics = nullptr,
          .progress = nullptr};
  {
    // Initial weights are drawn from torch's process-wide generator. Ranks that share a process
    // (the in-process tests) would interleave their draws, so creation is serialized: each
    // rank's start weights are a function of --seed alone.
    static std::mutex init_mu;
    std::lock_guard<std::mutex> lock(init_mu);
    torch::manual_seed(options.seed);
    ASSIGN_OR_RETURN(run.model,
                     CreateModel(md, ModelOptions{.kind = options.model,
                                                  .hidden_channels = options.hidden,
                                                  .num_layers = options.task == "graph"
                                                                    ? options.layers
                                                                    : std::ssize(options.fanouts),
                                                  .dropout = options.dropout}));
  }
  run.model->to(device);
  run.params = run.model->parameters();
  {  // Same seed everywhere already; the broadcast makes identical start weights a guarantee.
    torch::Tensor flat = FlattenParameters(run.params);
    RETURN_IF_ERROR(Collective(comm, flat, CollectiveOp::kBroadcast));
    UnflattenIntoParameters(flat, run.params);
  }
  run.optimizer = std::make_unique<torch::optim::Adam>(
      run.params, torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay));

  CheckpointPosition start;
  if (options.resume) {
    ASSIGN_OR_RETURN(absl::optional<CheckpointPosition> loaded,
                     LoadCheckpoint(options.checkpoint_dir, run.config, *run.model,
                                    *run.optimizer, device));
    if (loaded.has_value()) {
      start = *loaded;
      run.global_step = start.global_step;
      log << absl::StrFormat("rank %d: resuming from %s at epoch %d step %d\n", rank,
                             CheckpointPath(options.checkpoint_dir), start.epoch, start.step);
    } else {
      log << "rank " << rank << ": no checkpoint in " << options.checkpoint_dir
          << "; starting from scratch\n";
    }
  }
  if (rank == 0) {
    if (!options.metrics_file.empty()) {
      ASSIGN_OR_RETURN(run.metrics, MetricsFile::Open(options.metrics_file));
      RETURN_IF_ERROR(run.metrics->Write(
          {{"event", "run"}, {"config", run.config}, {"world_size", comm.world_size()},
           {"device", device.str()}, {"backend", comm.name()}, {"start_epoch", start.epoch},
           {"start_step", start.step}}));
    }
    run.progress = std::make_unique<ProgressReporter>(log, env.stdout_is_terminal,
                                                      options.progress_every_s);
  }

  TrainSummary summary;
  double total_seeds = 0, total_time = 0, total_wait = 0, total_step_time = 0;
  int timed_epochs = 0;
  TrainInput input;
  int64_t eval_batches = 0;  // of one evaluation of this rank (val and test)
  if (options.eval_every > 0) {
    for (const std::vector<ShardSeeds>* split : {&shards.val, &shards.test}) {
      for (const ShardSeeds& s : *split) {
        eval_batches += NaturalBatches(std::ssize(s.ids), options.batch_size);
      }
    }
  }
  for (int64_t epoch = start.epoch; epoch <= options.epochs; ++epoch) {
    const bool resumed = epoch == start.epoch && start.step > 0;
    double carried[3] = {0, 0, 0};
    if (resumed && rank == 0) {
      carried[0] = start.loss_sum, carried[1] = start.correct, carried[2] = start.seen;
    }
    if (input.pipeline == nullptr || epoch > input.last_epoch) {
      input = TrainInput();  // the last one's streams end first
      const int64_t last = options.task == "graph" ? epoch : options.epochs;
      ASSIGN_OR_RETURN(input, OpenTrainInput(run, TrainShards(shards, options, epoch), epoch,
                                             last, resumed ? start.step : 0, eval_batches));
    }
    ASSIGN_OR_RETURN(EpochStats st,
                     TrainEpoch(run, input, epoch, resumed ? start.step : 0, carried));
    // Per-epoch timing over ranks: [seeds/s, time, wait, all-reduce, the pipeline's stream
    // wait, staging, full wait] summed, time max.
    double sums[7] = {st.local_seeds / std::max(st.local_time_s, 1e-9), st.local_time_s,
                      st.local_wait_s, st.local_allreduce_s, st.pipeline.stream_wait_s,
                      st.pipeline.stage_s, st.pipeline.full_wait_s};
    RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(sums), ReduceOp::kSum));
    double time_s = st.local_time_s;
    RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(&time_s, 1), ReduceOp::kMax));
    const double n = comm.world_size();
    const double wait_fraction = sums[1] > 0 ? sums[2] / sums[1] : 0;
    const int64_t steps_run = st.steps - (resumed ? start.step : 0);
    const double step_time = time_s / static_cast<double>(std::max<int64_t>(1, steps_run));
    total_seeds += st.local_seeds;
    total_time += st.local_time_s;
    total_wait += st.local_wait_s;
    total_step_time += step_time;
    ++timed_epochs;
    summary.loss = st.seen > 0 ? st.loss_sum / st.seen : 0;
    summary.train_acc = st.seen > 0 ? st.correct / st.seen : 0;
    summary.epochs = static_cast<int>(epoch);
    std::string line = absl::StrFormat("epoch %d loss %.4f train_acc %.4f", epoch, summary.loss,
                                       summary.train_acc);
    const auto eval_start = Clock::now();
    const bool evaluate = options.eval_every > 0 &&
                          (epoch % options.eval_every == 0 || epoch == options.epochs);
    if (evaluate) {
      ASSIGN_OR_RETURN(EvalCounts val, EvaluateSplit(run, shards.val, epoch));
      ASSIGN_OR_RETURN(EvalCounts test, EvaluateSplit(run, shards.test, epoch));
      double counts[4] = {val.correct, val.total, test.correct, test.total};
      RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(counts), ReduceOp::kSum));
      summary.val_acc = counts[1] > 0 ? counts[0] / counts[1] : 0;
      summary.test_acc = counts[3] > 0 ? counts[2] / counts[3] : 0;
      absl::StrAppendFormat(&line, " val_acc %.4f test_acc %.4f", summary.val_acc,
                            summary.test_acc);
    }
    absl::StrAppendFormat(&line, " seeds_per_s %.1f time_s %.2f", sums[0], time_s);
    const double eval_s = SecondsSince(eval_start);
    log << absl::StrFormat(
        "rank %d epoch %d: %d steps, train %.3fs (step %.4fs, data wait %.3fs = %.1f%%, compute "
        "%.3fs), eval %.3fs\n",
        rank, epoch, steps_run, st.local_time_s, st.local_time_s / std::max<int64_t>(1, steps_run),
        st.local_wait_s, 100 * st.local_wait_s / std::max(st.local_time_s, 1e-9),
        st.local_time_s - st.local_wait_s, eval_s);
    if (rank == 0) {
      out << line << std::endl;
      if (run.metrics) {
        nlohmann::ordered_json rec = {
            {"event", "epoch"},          {"epoch", epoch},
            {"steps", steps_run},        {"global_step", run.global_step},
            {"loss", summary.loss},      {"train_acc", summary.train_acc},
            {"seeds_per_s", sums[0]},    {"time_s", time_s},
            {"step_time_s", step_time},  {"data_wait_s", sums[2] / n},
            {"compute_s", (sums[1] - sums[2]) / n},
            {"data_wait_fraction", wait_fraction}, {"eval_s", eval_s},
            // Means over ranks: where the loop's and the input pipeline's time went.
            {"allreduce_s", sums[3] / n},
            {"pipeline_stream_wait_s", sums[4] / n},
            {"pipeline_stage_s", sums[5] / n},
            {"pipeline_full_wait_s", sums[6] / n}};
        if (evaluate) {
          rec["val_acc"] = summary.val_acc;
          rec["test_acc"] = summary.test_acc;
        }
        RETURN_IF_ERROR(run.metrics->Write(rec));
      }
    }
    if (!options.checkpoint_dir.empty() && rank == 0) {
      const double none[3] = {0, 0, 0};
      RETURN_IF_ERROR(SaveCheckpoint(options.checkpoint_dir, *run.model, *run.optimizer,
                                     Position(run, epoch + 1, 0, none)));
    }
  }
  double totals[3] = {total_seeds / std::max(total_time, 1e-9), total_time, total_wait};
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(totals), ReduceOp::kSum));
  summary.seeds_per_s = totals[0];
  summary.data_wait_fraction = totals[1] > 0 ? totals[2] / totals[1] : 0;
  summary.step_time_s = timed_epochs > 0 ? total_step_time / timed_epochs : 0;
  summary.weights_fingerprint = Fingerprint(run.params);
  log << "rank " << rank << " weights_fingerprint " << summary.weights_fingerprint << std::endl;
  if (rank == 0) {
    // Keys in the order of DESIGN.md's example (ordered_json keeps insertion order).
    nlohmann::ordered_json j = {{"test_acc", summary.test_acc},
                                {"val_acc", summary.val_acc},
                                {"train_acc", summary.train_acc},
                                {"loss", summary.loss},
                                {"epochs", summary.epochs},
                                {"seeds_per_s", summary.seeds_per_s},
                                {"world_size", comm.world_size()},
                                {"weights_fingerprint", summary.weights_fingerprint},
                                {"data_wait_fraction", summary.data_wait_fraction},
                                {"step_time_s", summary.step_time_s}};
    out << j.dump() << std::endl;
    if (run.metrics) {
      nlohmann::ordered_json rec = j;
      rec["event"] = "summary";
      RETURN_IF_ERROR(run.metrics->Write(rec));
    }
  }
  return summary;
}

}  // namespace

absl::StatusOr<TrainSummary> RunTraining(const TrainerOptions& options, ServerSet& servers,
                                         Communicator& comm, std::ostream& out, std::ostream& log,
                                         const RunEnvironment& env) {
  try {
    return RunTrainingImpl(options, servers, comm, out, log, env);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("torch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("training: ", e.what()));
  }
}

}  // namespace graphshard::trainer
