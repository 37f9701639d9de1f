#include "trainer/epoch_loop.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <new>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/epoch_plan.h"
#include "client/graph_topology.h"
#include "client/read_ahead_stream.h"
#include "client/resuming_stream.h"
#include "common/status_macros.h"
#include "shm/ring.h"
#include "trainer/feature_store.h"
#include "trainer/gpu_memory.h"
#include "trainer/gpu_sampler.h"
#include "trainer/graph_step.h"
#include "trainer/input_pipeline.h"
#include "trainer/internal/session_state.h"
#include "trainer/static_shapes.h"
#include "trainer/step_profiler.h"
#include "trainer/tensors.h"
#include "trainer/tiered_gather.h"

namespace graphshard::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// Batches each training or evaluation stream reads ahead of the input pipeline.
constexpr int kReadAhead = client::kPipelineReadAhead;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

PipelineTimings Minus(PipelineTimings a, const PipelineTimings& b) {
  a.stream_wait_s -= b.stream_wait_s;
  a.stage_s -= b.stage_s;
  a.full_wait_s -= b.full_wait_s;
  a.h2d_s -= b.h2d_s;
  a.pad_s -= b.pad_s;
  a.gather_s -= b.gather_s;
  a.batches -= b.batches;
  return a;
}

// An epoch's per-step results: each step copies its loss and its correct count into its own
// slot on the device (2 copies, no device sync), and the sums are made on the host when read, at
// checkpoints and at the epoch's end. Accumulating on the device cost a dozen kernels per step
// (conversions, products, sums and a non-finite check), and the step is bound by launching
// kernels (tests/bench/RESULTS.md, "The C++ step profiled"). The host adds loss x weight step
// after step in double, as the device did: the same sums, bit for bit.
struct DeviceSums {
  DeviceSums(torch::Device device, int64_t steps)
      : losses(torch::zeros({steps}, torch::TensorOptions().dtype(torch::kFloat64).device(device))),
        correct(torch::zeros({steps}, torch::TensorOptions().dtype(torch::kInt64).device(device))),
        weights(static_cast<size_t>(steps), 0.0) {}

  // Step `step`'s mean loss over `weight` supervised items (seeds, or supervision edges) and the
  // count it got right (an integer tensor on the device).
  void Add(int64_t step, const torch::Tensor& loss, const torch::Tensor& right, double weight) {
    losses.select(0, step).copy_(loss.detach());
    correct.select(0, step).copy_(right);
    weights[static_cast<size_t>(step)] = weight;
    seen += weight;
  }

  // After Reduce (a collective: every rank gets the same `reduced`, and a non-finite loss on
  // any rank makes the sum non-finite on all): FailedPrecondition naming the epoch and the
  // first step whose loss was NaN or Inf, on every rank alike.
  absl::Status CheckFinite(client::Communicator& comm, const TrainingSums& reduced, int64_t epoch,
                           int64_t steps) const {
    if (std::isfinite(reduced.loss_sum)) return absl::OkStatus();
    // The earliest over ranks, as a max: kMax of (large - step), -1 where none.
    int64_t earliest =
        first_nonfinite_ < 0 ? -1 : std::numeric_limits<int64_t>::max() - first_nonfinite_;
    RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(&earliest, 1), client::ReduceOp::kMax));
    const std::string step =
        earliest < 0 ? std::string("a step")
                     : absl::StrCat("step ", std::numeric_limits<int64_t>::max() - earliest + 1,
                                    " of ", steps);
    return absl::FailedPreconditionError(absl::StrCat(
        "epoch ", epoch, ", ", step, ": the training loss is ", reduced.loss_sum,
        "; training stopped (non-finite features, or a diverging run: try a lower --lr)"));
  }

  // Over all ranks (a collective), plus what a checkpoint carried into the epoch. Reads the
  // slots (a device sync).
  absl::StatusOr<TrainingSums> Reduce(client::Communicator& comm, const TrainingSums& carried) {
    const torch::Tensor l = losses.to(torch::kCPU);
    const torch::Tensor c = correct.to(torch::kCPU);
    const double* loss = l.data_ptr<double>();
    const int64_t* right = c.data_ptr<int64_t>();
    double loss_sum = 0, correct_sum = 0;
    first_nonfinite_ = -1;
    for (size_t s = 0; s < weights.size(); ++s) {
      if (weights[s] == 0) continue;  // a step without a batch
      loss_sum += loss[s] * weights[s];
      correct_sum += static_cast<double>(right[s]);
      if (first_nonfinite_ < 0 && !std::isfinite(loss[s])) {
        first_nonfinite_ = static_cast<int64_t>(s);
      }
    }
    double sums[3] = {loss_sum, correct_sum, seen};
    RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(sums), client::ReduceOp::kSum));
    return TrainingSums{.loss_sum = sums[0] + carried.loss_sum,
                        .correct = sums[1] + carried.correct,
                        .seen = sums[2] + carried.seen};
  }

  torch::Tensor losses;         // float64 [steps]: each step's mean loss
  torch::Tensor correct;        // int64 [steps]: each step's correct predictions
  std::vector<double> weights;  // each step's supervised items; 0: no batch
  double seen = 0;              // seeds (node tasks) or supervision edges (link) the sums are over
  double seeds = 0;             // seeds: nodes, graphs, or positive edges (link) trained on

 private:
  int64_t first_nonfinite_ = -1;  // found by the last Reduce
};

// Link prediction: the dot product of the endpoints' embeddings, one logit per supervision edge.
torch::Tensor LinkScores(GnnModelImpl& model, const BatchTensors& batch) {
  const std::vector<torch::Tensor> h = model.EmbedSeeds(batch);
  const LinkTensors& l = batch.link;
  const torch::Tensor src = h[static_cast<size_t>(l.src_type)].index_select(0, l.src);
  const torch::Tensor dst = h[static_cast<size_t>(l.dst_type)].index_select(0, l.dst);
  return (src * dst).sum(1);
}

// One optimizer step of this rank on `batch` (none: a rank without seeds, which still joins the
// all-reduce with zero gradients), gradients averaged over ranks. The loss (undefined without a
// batch); `allreduce_s` accumulates the time spent in the gradient all-reduce. `graphed`: the
// forward and backward pass of a node batch replayed as a CUDA graph (--static-shapes), else
// null.
absl::StatusOr<torch::Tensor> Step(SessionState& st, client::Communicator& comm,
                                   const absl::optional<BatchTensors>& batch, int64_t step,
                                   DeviceSums& sums, double& allreduce_s, GraphedStep* graphed) {
  st.flat.grads.zero_();  // every parameter's gradient is a view of it (tensors.h)
  torch::Tensor loss;
  {
    // Named phases for --profile-dir (step_profiler.h); nearly free when no profiler runs.
    RECORD_USER_SCOPE("gs::forward_backward");
    if (batch.has_value() && batch->link.present) {
      // Binary cross-entropy over the positive and negative edges; accuracy at probability 0.5;
      // the seeds counted are the positive (seed) edges.
      const torch::Tensor scores = LinkScores(*st.model, *batch);
      loss = torch::nn::functional::binary_cross_entropy_with_logits(scores, batch->link.label);
      loss.backward();
      sums.Add(step, loss, scores.detach().gt(0).eq(batch->link.label.gt(0.5)).sum(),
               static_cast<double>(scores.size(0)));
      sums.seeds += static_cast<double>(batch->link.num_pos);
    } else if (batch.has_value() && graphed != nullptr) {
      ASSIGN_OR_RETURN(const GraphedOutputs out, graphed->Run(*st.model, *batch, st.flat.grads));
      loss = out.loss;
      const double bs = static_cast<double>(batch->seeds);
      sums.Add(step, loss, out.correct, bs);
      sums.seeds += bs;
    } else if (batch.has_value()) {
      torch::Tensor logits = st.model->Forward(*batch);
      loss = torch::nn::functional::cross_entropy(logits, batch->y);
      loss.backward();
      const double bs = static_cast<double>(batch->seeds);
      sums.Add(step, loss, logits.argmax(1).eq(batch->y).sum(), bs);
      sums.seeds += bs;
    }
  }
  if (comm.world_size() > 1) {
    RECORD_USER_SCOPE("gs::allreduce");
    const auto reduce_start = Clock::now();
    RETURN_IF_ERROR(QueueAllReduceSum(comm, st.flat.grads));
    st.flat.grads.div_(comm.world_size());
    allreduce_s += SecondsSince(reduce_start);
  }
  {
    RECORD_USER_SCOPE("gs::optimizer");
    st.optimizer->step();
  }
  ++st.global_step;
  return loss;
}

// The steps of a pass over `num_epochs` epochs: the schedule's from `first_step` in the first,
// all of them in the others.
std::vector<int> PassSteps(const client::EpochSchedule& schedule, int64_t first_step,
                           int64_t num_epochs) {
  std::vector<int> steps(schedule.step_stream.begin() + first_step, schedule.step_stream.end());
  for (int64_t e = 1; e < num_epochs; ++e) {
    steps.insert(steps.end(), schedule.step_stream.begin(), schedule.step_stream.end());
  }
  return steps;
}

}  // namespace

// The training input of epochs [first epoch, last_epoch]: one pipeline over one stream per shard
// across all of them, so the servers build the next epoch's first batches (and the pipeline
// copies them) while this epoch ends. Shards that stay (node tasks) open it once for the whole
// run; shards redrawn every epoch (graph task), once per epoch.
struct EpochLoop::TrainInput {
  int64_t last_epoch = 0;
  int64_t steps = 0;  // per epoch, the same on every rank
  std::unique_ptr<InputPipeline> pipeline;
};

struct EpochLoop::TopologyRead {
  Clock::time_point start;
  double seconds = 0;
  absl::StatusOr<client::GraphTopology> result = absl::UnknownError("not read");
  std::thread thread;
  ~TopologyRead() {
    if (thread.joinable()) thread.join();
  }
};

EpochLoop::EpochLoop(const client::TrainerOptions& options, const client::TaskPlan& plan,
                     client::ServerSet& servers, client::Communicator& comm, Session& session,
                     const client::Shards& shards, client::ProgressReporter* progress)
    : options_(options),
      plan_(plan),
      servers_(servers),
      comm_(comm),
      session_(session),
      shards_(shards),
      progress_(progress),
      host_id_(shm::HostId()),
      gpu_sampler_(options.sampler == client::Sampler::kGpu) {}

EpochLoop::~EpochLoop() = default;

void EpochLoop::UseGpuSampler(bool on, bool topology_on_host) {
  gpu_sampler_ = on;
  topology_on_host_ = on && topology_on_host;
  if (!on) topology_read_.reset();  // joins its thread
}

void EpochLoop::SampleOnServersAfterAll(absl::string_view why) {
  if (options_.sampler != client::Sampler::kAuto || !gpu_sampler_) return;
  UseGpuSampler(false);
  std::cerr << "rank " << comm_.rank()
            << ": training batches sampled by the servers (--sampler auto: " << why << ")\n";
}

absl::Status EpochLoop::EnableProfiler(const std::string& dir) {
  ASSIGN_OR_RETURN(profiler_, StepProfiler::Create(dir, comm_.rank(), options_.epochs,
                                                   session_.state().device.is_cuda()));
  return absl::OkStatus();
}

absl::Status EpochLoop::EnableStaticShapes() {
  static_shapes_ = std::make_shared<StaticShapes>();
  if (session_.state().device.is_cuda()) {
    ASSIGN_OR_RETURN(graphed_, GraphedStep::Create(session_.state().device));
  }
  return absl::OkStatus();
}

absl::StatusOr<client::FeatureStoreLayout> EpochLoop::LoadFeatureStore(
    int64_t device_cache_bytes, int64_t host_cache_bytes, const DeviceTierGroup* shared) {
  if (store_ != nullptr) return store_->layout();
  const client::ServerMetadata& md = servers_.metadata;
  FeatureStoreOptions o;
  o.device = session_.state().device;
  o.dtype = options_.feature_dtype;
  o.device_cache_bytes = device_cache_bytes;
  o.host_cache_bytes = host_cache_bytes;
  // --reuse-rows: the last --prefetch batches' rows stay on the device to be copied from (as
  // many as the training pipeline holds ahead: the sampler is chosen before the load).
  const int prefetch = client::ResolvePrefetch(options_.prefetch, gpu_sampler_);
  o.reuse_batches = options_.reuse_rows ? std::min(prefetch, kMaxReusedBatches - 1) : 0;
  if (options_.host_tier == client::HostTier::kLocal) {
    for (const std::string& host : servers_.host_ids) o.host_parts.push_back(host == host_id_);
  }
  // Remote rows through this host's servers (their data plane and hot-row caches).
  for (int p = 0; p < std::ssize(servers_.host_ids); ++p) {
    if (options_.remote_rows == client::RemoteRows::kHost &&
        servers_.host_ids[static_cast<size_t>(p)] == host_id_) {
      o.remote_route.gateway_parts.push_back(p);
    }
  }
  // Answers inline, not in shared memory: a segment made, faulted in and unlinked per call moved
  // 1.4 GB/s against 2.1 GB/s inline on the GPU machine (tests/bench/remote_rows_bench.sh).
  o.remote_route.client_host_id.clear();
  o.shared = shared;
  o.comm = &comm_;
  // The GPU sampler's topology is read beside the rows (both from the servers, on threads).
  if (gpu_sampler_ && gpu_graph_ == nullptr && topology_read_ == nullptr &&
      GpuSamplerApplies().ok()) {
    StartTopologyRead();
  }
  std::unique_ptr<client::VisitCounts> hotness;
  if (shared == nullptr &&
      device_cache_bytes < client::FeatureTableBytes(md, options_.feature_dtype)) {
    ASSIGN_OR_RETURN(hotness, Presample());
    o.hotness = hotness.get();
  }
  ASSIGN_OR_RETURN(store_, FeatureStore::Load(md, LiveClientOf(), o));
  return store_->layout();
}

client::ClientOf EpochLoop::LiveClientOf() {
  return [this](int part) -> absl::StatusOr<client::PartitionClient*> {
    ASSIGN_OR_RETURN(
        client::PartDirectory::LiveServer live,
        servers_.directory->Live(part, comm_.rank(), &servers_.metadata,
                                 absl::Now() + absl::Seconds(options_.server_wait_s), host_id_));
    return live.client;
  };
}

PipelineOptions EpochLoop::PipelineOptionsFor(bool train, bool gpu_sampled) const {
  PipelineOptions po;
  po.depth = client::ResolvePrefetch(options_.prefetch, gpu_sampled);
  po.device = session_.state().device;
  po.normalize_features = options_.normalize_features;
  po.num_classes = servers_.metadata.num_classes;
  po.store = store_;
  if (train) po.static_shapes = static_shapes_;
  return po;
}

absl::Status EpochLoop::GpuSamplerApplies() const {
  if (servers_.metadata.heterogeneous() || !plan_.link_edge_type.empty() ||
      plan_.redraw_train_shards) {
    return absl::FailedPreconditionError(
        "--sampler gpu samples homogeneous graphs for node tasks; this graph has several node or "
        "edge types, or the task is not a node task: use --sampler server");
  }
  return absl::OkStatus();
}

void EpochLoop::StartTopologyRead() {
  topology_read_ = std::make_unique<TopologyRead>();
  TopologyRead* read = topology_read_.get();
  read->start = Clock::now();
  // The metadata and the live-server lookup are the ones the feature store's threads use too
  // (the directory is thread-safe; nothing writes the metadata while the loop starts).
  read->thread = std::thread([this, read] {
    try {
      client::TopologyProgress progress;
      progress.report = [rank = comm_.rank()](int64_t done, int64_t total, absl::Duration t) {
        if (done == total) return;  // the end is in the line that follows it
        std::cerr << absl::StrFormat(
            "rank %d: --sampler gpu: the topology read, %.0f%% of %d nodes after %.0f s\n", rank,
            100.0 * static_cast<double>(done) / static_cast<double>(std::max<int64_t>(total, 1)),
            total, absl::ToDoubleSeconds(t));
      };
      read->result = client::ReadTopology(servers_.metadata, LiveClientOf(), 1 << 14, 16, progress);
    } catch (const std::bad_alloc&) {  // a thread's exception would end the process
      read->result = absl::ResourceExhaustedError(absl::StrCat(
          "--sampler gpu: out of host memory while reading the topology of ",
          servers_.metadata.node_types[0].num_nodes,
          " nodes (4 bytes per edge, 16 per node); use --sampler server or a host with more "
          "memory"));
    }
    read->seconds = std::chrono::duration<double>(Clock::now() - read->start).count();
  });
}

absl::StatusOr<client::GraphTopology> EpochLoop::TakeTopology(double& read_s, double& waited_s) {
  if (topology_read_ == nullptr) StartTopologyRead();
  const auto t0 = Clock::now();
  topology_read_->thread.join();
  waited_s = std::chrono::duration<double>(Clock::now() - t0).count();
  read_s = topology_read_->seconds;
  absl::StatusOr<client::GraphTopology> topology = std::move(topology_read_->result);
  topology_read_.reset();
  return topology;
}

absl::Status EpochLoop::LoadGpuGraph() {
  double read_s = 0, waited_s = 0;
  ASSIGN_OR_RETURN(client::GraphTopology topology, TakeTopology(read_s, waited_s));
  const int64_t num_edges = std::ssize(topology.indices);
  ASSIGN_OR_RETURN(gpu_graph_, GpuGraph::Create(std::move(topology), session_.state().device,
                                                topology_on_host_));
  const auto mib = [](int64_t b) { return static_cast<double>(b) / (1 << 20); };
  std::cerr << absl::StrFormat(
      "rank %d: --sampler gpu: %d nodes, %d in-edges read in %.1f s (%.1f s of it waited for at "
      "the first training pass), %s; %d batches made ahead (--prefetch %s)\n",
      comm_.rank(), gpu_graph_->num_nodes(), num_edges, read_s, waited_s,
      topology_on_host_
          ? absl::StrFormat("%.0f MiB of sources in page-locked host memory, read by %s over "
                            "PCIe, and %.0f MiB of offsets on it",
                            mib(gpu_graph_->host_bytes()), session_.state().device.str(),
                            mib(gpu_graph_->device_bytes()))
          : absl::StrFormat("%.0f MiB on %s", mib(gpu_graph_->device_bytes()),
                            session_.state().device.str()),
      client::ResolvePrefetch(options_.prefetch, /*gpu_sampled=*/true),
      options_.prefetch > 0 ? std::to_string(options_.prefetch) : "auto");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<InputPipeline>> EpochLoop::OpenGpuPipeline(
    const std::vector<client::ShardSeeds>& shards, const client::EpochSchedule& schedule,
    int64_t first_step, int64_t epoch, int64_t num_epochs) {
  const client::ServerMetadata& md = servers_.metadata;
  RETURN_IF_ERROR(GpuSamplerApplies());
  if (store_ == nullptr) {
    return absl::FailedPreconditionError(
        "--sampler gpu needs the feature rows on the GPU, but the feature store holds none "
        "(--feature-store auto resolved to server: the table does not fit); use --sampler "
        "server, or --feature-store device with --device-cache-mib");
  }
  if (gpu_graph_ == nullptr) {
    const absl::Status loaded = LoadGpuGraph();
    if (absl::IsResourceExhausted(loaded) && options_.sampler == client::Sampler::kAuto) {
      SampleOnServersAfterAll(loaded.message());
      return OpenPipeline(shards, schedule, first_step, /*train=*/true, epoch, num_epochs);
    }
    RETURN_IF_ERROR(loaded);
  }
  const client::ClientOf client_of = LiveClientOf();
  std::vector<int64_t> first = client::BatchesBefore(schedule, first_step);
  std::vector<std::unique_ptr<TensorSource>> sources(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    if (schedule.stream_batches[i] * num_epochs <= first[i]) continue;
    GpuStreamPlan plan;
    plan.seeds = shards[i].ids;
    ASSIGN_OR_RETURN(plan.labels, client::ReadLabels(md, client_of, plan.seeds));
    for (size_t j = 0; j < plan.labels.size(); ++j) {
      if (plan.labels[j] < 0 || plan.labels[j] >= md.num_classes) {
        return absl::InvalidArgumentError(
            absl::StrCat("seed ", plan.seeds[j], " (", md.target_type, ") has label ",
                         plan.labels[j], ", outside [0, num_classes ", md.num_classes, ")"));
      }
    }
    plan.shuffle_seed = client::StreamShuffleSeed(options_.seed, shards[i].part);
    plan.batch_size = options_.batch_size;
    plan.epoch = epoch;
    plan.first_batch = first[i];
    plan.num_batches = schedule.stream_batches[i];
    plan.num_epochs = num_epochs;
    plan.fanouts = plan_.fanouts;
    plan.replace = options_.replace;
    ASSIGN_OR_RETURN(sources[i], GpuSampledStream::Create(gpu_graph_, std::move(plan)));
  }
  return std::make_unique<InputPipeline>(std::move(sources),
                                         PassSteps(schedule, first_step, num_epochs),
                                         PipelineOptionsFor(/*train=*/true, /*gpu_sampled=*/true));
}

absl::StatusOr<std::unique_ptr<client::VisitCounts>> EpochLoop::Presample() {
  auto counts = std::make_unique<client::VisitCounts>(servers_.metadata);
  constexpr int64_t kFirstEpoch = 1;
  const std::vector<client::ShardSeeds> train =
      client::TrainShards(shards_, plan_, options_.seed, kFirstEpoch);
  for (size_t i = 0; i < train.size(); ++i) {
    const int64_t batches = client::NaturalBatches(std::ssize(train[i].ids), options_.batch_size);
    if (batches == 0) continue;
    ASSIGN_OR_RETURN(std::unique_ptr<client::BatchStream> stream,
                     OpenStream(train[i], i, /*train=*/true, kFirstEpoch, 0, batches, 1,
                                /*without_features=*/true));
    while (true) {
      ASSIGN_OR_RETURN(absl::optional<client::MinibatchData> batch, stream->Next());
      if (!batch.has_value()) break;
      counts->Add(*batch);
    }
  }
  return counts;
}

absl::StatusOr<std::unique_ptr<client::BatchStream>> EpochLoop::OpenStream(
    const client::ShardSeeds& shard, size_t index, bool train, int64_t epoch, int64_t first_batch,
    int64_t num_batches, int64_t num_epochs, bool without_features) {
  client::StreamOptions so;
  so.seeds = shard.ids;
  so.batch_size = options_.batch_size;
  so.shuffle = train;
  so.shuffle_seed = client::StreamShuffleSeed(options_.seed, shard.part);
  so.epoch = epoch;
  so.first_batch = first_batch;
  so.num_batches = num_batches;
  so.num_epochs = num_epochs;
  so.fanouts = plan_.fanouts;
  so.replace = options_.replace;
  so.temporal = !options_.temporal         ? client::TemporalSampling::kOff
                : options_.temporal_strict ? client::TemporalSampling::kBefore
                                           : client::TemporalSampling::kAtOrBefore;
  so.temporal_last = options_.temporal_strategy == "last";
  so.feature_dtype = options_.feature_dtype;
  so.client_host_id = host_id_;
  so.without_features = without_features;
  if (!plan_.link_edge_type.empty()) {  // training negatives as asked; evaluation: uniform
    so.link = {.edge_type = plan_.link_edge_type,
               .split = shard.split,
               .neg_ratio = train ? options_.link.neg_ratio : options_.link.eval_neg_ratio,
               .degree_negatives = train && options_.link.degree_negatives};
  }
  // The pipeline keeps --prefetch steps ready (the servers sampling: ResolvePrefetch), one being
  // converted, the current step's and possibly the previous one's (until the loop drops it); one
  // spare.
  // Pipeline streams are read ahead (kReadAhead batches, OpenPipeline); a batch copied by DMA
  // out of its segment holds it until the copy is done (input_pipeline.h: at most 3 such).
  so.max_held_batches =
      client::ResolvePrefetch(options_.prefetch, /*gpu_sampled=*/false) + 4 + kReadAhead;
  // Resumed on a restarted server or another replica when the stream breaks; replicas share
  // the load by rank (same-host ones first).
  const int rank = comm_.rank();
  auto stream = std::make_unique<client::ResumingBatchStream>(
      *servers_.directory, shard.part, nullptr, std::move(so), servers_.metadata,
      client::ResumeOptions{.wait_s = options_.server_wait_s,
                            .preferred_replica = rank + static_cast<int>(index),
                            .log = [rank](const std::string& line) {
                              std::cerr << "rank " + std::to_string(rank) + ": " + line + "\n";
                            }});
  RETURN_IF_ERROR(stream->Start());
  return stream;
}

absl::StatusOr<std::unique_ptr<InputPipeline>> EpochLoop::OpenPipeline(
    const std::vector<client::ShardSeeds>& shards, const client::EpochSchedule& schedule,
    int64_t first_step, bool train, int64_t epoch, int64_t num_epochs) {
  if (train && gpu_sampler_) {
    return OpenGpuPipeline(shards, schedule, first_step, epoch, num_epochs);
  }
  std::vector<int64_t> first = client::BatchesBefore(schedule, first_step);
  std::vector<std::unique_ptr<client::BatchStream>> streams(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    if (schedule.stream_batches[i] * num_epochs <= first[i]) continue;
    ASSIGN_OR_RETURN(std::unique_ptr<client::BatchStream> stream,
                     OpenStream(shards[i], i, train, epoch, first[i], schedule.stream_batches[i],
                                num_epochs, /*without_features=*/store_ != nullptr));
    // Each stream's batches read and checked by a thread of its own, beside the pipeline's.
    streams[i] = std::make_unique<client::ReadAheadStream>(std::move(stream), kReadAhead);
  }
  return std::make_unique<InputPipeline>(std::move(streams),
                                         PassSteps(schedule, first_step, num_epochs),
                                         PipelineOptionsFor(train, /*gpu_sampled=*/false));
}

absl::Status EpochLoop::OpenTrainInput(int64_t first_epoch, int64_t first_step) {
  input_.reset();  // the last one's streams end first
  const std::vector<client::ShardSeeds> train =
      client::TrainShards(shards_, plan_, options_.seed, first_epoch);
  std::vector<int64_t> natural;
  int64_t total = 0;
  for (const client::ShardSeeds& s : train) {
    natural.push_back(client::NaturalBatches(std::ssize(s.ids), options_.batch_size));
    total += natural.back();
  }
  auto input = std::make_unique<TrainInput>();
  input->last_epoch = plan_.redraw_train_shards ? first_epoch : options_.epochs;
  input->steps = total;  // every rank runs the largest count
  RETURN_IF_ERROR(comm_.AllReduce(absl::MakeSpan(&input->steps, 1), client::ReduceOp::kMax));
  if (input->steps == 0) {
    return absl::FailedPreconditionError("no trainer has any training seed (empty train split)");
  }
  const client::EpochSchedule schedule = client::ScheduleEpoch(natural, input->steps);
  ASSIGN_OR_RETURN(input->pipeline, OpenPipeline(train, schedule, first_step, true, first_epoch,
                                                 input->last_epoch - first_epoch + 1));
  input_ = std::move(input);
  return absl::OkStatus();
}

absl::StatusOr<EpochResult> EpochLoop::Train(int64_t epoch, int64_t first_step,
                                             const TrainingSums& carried) {
  if (input_ == nullptr || epoch > input_->last_epoch) {
    RETURN_IF_ERROR(OpenTrainInput(epoch, first_step));
  }
  SessionState& st = session_.state();
  const auto t0 = Clock::now();
  const int64_t steps = input_->steps;
  InputPipeline& pipeline = *input_->pipeline;
  const PipelineTimings timings_before = pipeline.timings();
  DeviceSums sums(st.device, steps);
  double wait_s = 0, allreduce_s = 0;
  client::FeatureTierCounts tiers;
  if (st.device.is_cuda()) ResetPeakGpuMemory(st.device.index());
  st.model->train();
  if (progress_ != nullptr) {
    progress_->StartEpoch(static_cast<int>(epoch), options_.epochs, steps, first_step);
  }
  for (int64_t s = first_step; s < steps; ++s) {
    if (profiler_ != nullptr) RETURN_IF_ERROR(profiler_->BeforeStep(epoch, s, steps));
    const auto wait_start = Clock::now();
    absl::optional<BatchTensors> batch;
    {
      RECORD_USER_SCOPE("gs::next_batch");
      ASSIGN_OR_RETURN(batch, pipeline.Next());
    }
    wait_s += SecondsSince(wait_start);
    if (batch.has_value()) tiers += batch->tiers;
    torch::manual_seed(
        client::StepSeed(options_.seed, epoch, comm_.rank(), s));  // dropout, resumable
    const int64_t captures = graphed_ != nullptr ? graphed_->captures() : 0;
    ASSIGN_OR_RETURN(torch::Tensor loss,
                     Step(st, comm_, batch, s, sums, allreduce_s, graphed_.get()));
    if (graphed_ != nullptr && graphed_->captures() != captures) {
      std::cerr << "rank " << comm_.rank() << ": training step captured as a CUDA graph ("
                << graphed_->last_shape() << "; capture " << graphed_->captures() << ")\n";
    }
    ++steps_this_process_;
    if (progress_ != nullptr && loss.defined() && progress_->Due(s)) {
      progress_->Step(s, loss.item<double>(), sums.seen);
    }
    if (options_.checkpoint_every > 0 && st.global_step % options_.checkpoint_every == 0 &&
        s + 1 < steps && !options_.checkpoint_dir.empty()) {
      ASSIGN_OR_RETURN(const TrainingSums so_far, sums.Reduce(comm_, carried));
      RETURN_IF_ERROR(sums.CheckFinite(comm_, so_far, epoch, steps));  // no NaN checkpoint
      if (comm_.rank() == 0) {
        RETURN_IF_ERROR(session_.Save({.epoch = epoch,
                                       .step = s + 1,
                                       .loss_sum = so_far.loss_sum,
                                       .correct = so_far.correct,
                                       .seen = so_far.seen}));
      }
    }
    if (options_.stop_after_steps > 0 && steps_this_process_ >= options_.stop_after_steps) {
      return absl::AbortedError(
          absl::StrCat("stopped after ", steps_this_process_, " steps (--stop-after-steps)"));
    }
  }
  if (progress_ != nullptr) progress_->EndEpoch();
  if (static_shapes_ != nullptr) {
    // What padding costs the GPU: the batches padded so far (the pipeline pads ahead).
    const StaticShapes::Totals t = static_shapes_->totals();
    auto over = [](int64_t padded, int64_t real) {
      return absl::StrFormat("%+.1f%%", real > 0 ? 100.0 * (padded - real) / real : 0.0);
    };
    std::cerr << "rank " << comm_.rank() << ": static shapes: " << t.batches
              << " batches padded so far, rows " << over(t.padded_nodes, t.real_nodes) << ", edges "
              << over(t.padded_edges, t.real_edges) << " over the real ones\n";
  }
  RETURN_IF_ERROR(comm_.Flush());
  if (profiler_ != nullptr) RETURN_IF_ERROR(profiler_->EndEpoch(epoch));
  EpochResult r;
  ASSIGN_OR_RETURN(r.sums, sums.Reduce(comm_, carried));
  RETURN_IF_ERROR(sums.CheckFinite(comm_, r.sums, epoch, steps));
  const PipelineTimings pipeline_s = Minus(pipeline.timings(), timings_before);
  r.local = {.steps = steps - first_step,
             .seeds = sums.seeds,
             .time_s = SecondsSince(t0),
             .wait_s = wait_s,
             .allreduce_s = allreduce_s,
             .pipeline_stream_wait_s = pipeline_s.stream_wait_s,
             .pipeline_stage_s = pipeline_s.stage_s,
             .pipeline_full_wait_s = pipeline_s.full_wait_s,
             .pipeline_h2d_s = pipeline_s.h2d_s,
             .pipeline_pad_s = pipeline_s.pad_s,
             .pipeline_gather_s = pipeline_s.gather_s,
             .tiers = tiers};
  if (st.device.is_cuda()) {
    const absl::optional<int64_t> peak = PeakGpuMemoryBytes(st.device.index());
    // The shared device tier's share is GPU memory of its own (cudaMalloc, for CUDA IPC),
    // outside the caching allocator's count: added here.
    r.local.peak_gpu_memory_bytes =
        peak ? *peak + (store_ != nullptr ? store_->bytes_outside_allocator() : 0) : -1;
  }
  return r;
}

absl::StatusOr<EvalCounts> EpochLoop::Evaluate(const std::vector<client::ShardSeeds>& split,
                                               int64_t epoch) {
  SessionState& st = session_.state();
  client::EpochSchedule schedule;
  for (size_t i = 0; i < split.size(); ++i) {
    const int64_t n = client::NaturalBatches(std::ssize(split[i].ids), options_.batch_size);
    schedule.stream_batches.push_back(n);
    schedule.step_stream.insert(schedule.step_stream.end(), static_cast<size_t>(n),
                                static_cast<int>(i));
  }
  ASSIGN_OR_RETURN(auto pipeline, OpenPipeline(split, schedule, 0, false, epoch, 1));
  torch::NoGradGuard no_grad;
  st.model->eval();
  torch::Tensor correct =
      torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(st.device));
  double total = 0;
  EvalCounts link_counts;
  for (size_t s = 0; s < schedule.step_stream.size(); ++s) {
    ASSIGN_OR_RETURN(absl::optional<BatchTensors> batch, pipeline->Next());
    if (batch->link.present) {
      const torch::Tensor scores = LinkScores(*st.model, *batch).to(torch::kCPU).contiguous();
      const int64_t p = batch->link.num_pos;
      const absl::Span<const float> all(scores.data_ptr<float>(),
                                        static_cast<size_t>(scores.size(0)));
      client::AddLinkScores(all.subspan(0, static_cast<size_t>(p)),
                            all.subspan(static_cast<size_t>(p)), options_.link.hits_k,
                            link_counts.link);
      continue;
    }
    torch::Tensor logits = st.model->Forward(*batch);
    correct += logits.argmax(1).eq(batch->y).sum();
    total += static_cast<double>(batch->seeds);
  }
  if (!plan_.link_edge_type.empty()) return link_counts;
  return EvalCounts{static_cast<double>(correct.item<int64_t>()), total, {}};
}

}  // namespace graphshard::trainer
