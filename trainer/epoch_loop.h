#ifndef GRAPHSHARD_TRAINER_EPOCH_LOOP_H_
#define GRAPHSHARD_TRAINER_EPOCH_LOOP_H_

// The epoch loop of one rank: trains the steps of an epoch on minibatches streamed from its
// servers (input_pipeline.h; every rank the same number of steps), all-reducing gradients, with
// checkpoints every --checkpoint-every steps and --stop-after-steps; and evaluates a split. No
// Torch in this header. Every rank makes the same calls in the same order (collectives).
// Not thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/communicator.h"
#include "client/epoch_plan.h"
#include "client/feature_rows.h"
#include "client/feature_tiers.h"
#include "client/graph_topology.h"
#include "client/link_task.h"
#include "client/metrics.h"
#include "client/options.h"
#include "client/report.h"
#include "client/server_set.h"
#include "client/shards.h"
#include "client/task.h"
#include "client/visit_counts.h"
#include "trainer/session.h"

namespace graphshard::trainer {

class InputPipeline;     // input_pipeline.h
class FeatureStore;      // feature_store.h
struct DeviceTierGroup;  // feature_store.h
class StepProfiler;      // step_profiler.h
class StaticShapes;      // static_shapes.h
class GraphedStep;       // graph_step.h
class GpuGraph;          // gpu_sampler.h
struct PipelineOptions;  // input_pipeline.h

// An epoch's training sums over all ranks: sum of loss * seeds, correct predictions, seeds.
struct TrainingSums {
  double loss_sum = 0;
  double correct = 0;
  double seen = 0;
};

struct EpochResult {
  TrainingSums sums;                // over all ranks, including what a checkpoint carried in
  client::EpochMeasurements local;  // this rank's
};

struct EvalCounts {
  double correct = 0;
  double total = 0;
  client::LinkEvalCounts link{};  // --task link
};

class EpochLoop {
 public:
  // All arguments must outlive the loop. `progress`: rank 0's, else nullptr.
  EpochLoop(const client::TrainerOptions& options, const client::TaskPlan& plan,
            client::ServerSet& servers, client::Communicator& comm, Session& session,
            const client::Shards& shards, client::ProgressReporter* progress);
  ~EpochLoop();
  EpochLoop(const EpochLoop&) = delete;
  EpochLoop& operator=(const EpochLoop&) = delete;

  // --feature-store device (or auto resolved to it, train.cc): loads the tiered feature store
  // (feature_store.h; once, before the first Train), its device tier within
  // `device_cache_bytes`, its host tier with the rows of this host's parts (--host-tier local)
  // and up to `host_cache_bytes` of other hosts' rows.
  // Below the whole table, the device tier's rows are ranked by a pre-sampling pass over this
  // rank's first-epoch training batches (client::VisitCounts). Later batches are asked without
  // rows. Returns what the store holds. The servers' errors; ResourceExhausted when a tier does
  // not fit (nothing kept: batches then carry their rows). With `shared` (--device-tier, every
  // rank alike: it is collective) the host's GPUs hold one device tier together and the budgets
  // are not used.
  absl::StatusOr<client::FeatureStoreLayout> LoadFeatureStore(
      int64_t device_cache_bytes, int64_t host_cache_bytes,
      const DeviceTierGroup* shared = nullptr);

  // Whether this rank's training batches are sampled on its GPU (gpu_sampler.h): --sampler gpu,
  // or auto where train.cc resolves it so; before LoadFeatureStore (which then reads the
  // topology beside the rows). Switched off, a topology read already started is waited for and
  // dropped. `topology_on_host`: the sampler keeps the topology in page-locked host memory
  // (--sampler-topology host, or auto resolved so), not on the GPU.
  void UseGpuSampler(bool on, bool topology_on_host = false);
  bool gpu_sampler() const { return gpu_sampler_; }
  // --sampler auto, after it chose the GPU: the servers sample after all (UseGpuSampler(false)),
  // and the log says why. Nothing otherwise.
  void SampleOnServersAfterAll(absl::string_view why);
  // OK when the GPU sampler can sample this graph and task (homogeneous, a node task, shards
  // not redrawn per epoch), else FailedPrecondition saying so.
  absl::Status GpuSamplerApplies() const;

  // --profile-dir: profiles a window of steps of this rank (step_profiler.h). InvalidArgument
  // naming the directory when it cannot be written.
  absl::Status EnableProfiler(const std::string& dir);

  // --static-shapes on: training batches padded to static shapes (static_shapes.h),
  // and on a CUDA device the step's forward and backward pass replayed as a CUDA graph
  // (graph_step.h). Before the first Train. Unimplemented where this LibTorch has no CUDA
  // graphs and the device is a GPU.
  absl::Status EnableStaticShapes();

  // Trains steps [first_step, steps of the epoch) of `epoch`, opening the training streams when
  // the open ones do not cover it. `carried`: the sums a checkpoint carried into this epoch
  // (rank 0 only; zeros elsewhere). Errors: the streams', the collectives', a checkpoint's;
  // FailedPrecondition when no rank has a training seed; Aborted after --stop-after-steps.
  absl::StatusOr<EpochResult> Train(int64_t epoch, int64_t first_step, const TrainingSums& carried);

  // Every batch of this rank's shards of a split, in order, without dropout: its correct
  // predictions and seeds (this rank's alone); link prediction: the scores' counts (link_task.h)
  // over the split's edges and --eval-neg-ratio uniform negatives each.
  absl::StatusOr<EvalCounts> Evaluate(const std::vector<client::ShardSeeds>& split, int64_t epoch);

 private:
  struct TrainInput;

  // Opens the training input of epochs [first_epoch, its last] (all remaining ones, or one when
  // shards are redrawn per epoch), from `first_step` of the first.
  absl::Status OpenTrainInput(int64_t first_epoch, int64_t first_step);
  // A pipeline over one stream per shard for `num_epochs` epochs from `epoch`; steps as
  // scheduled (every epoch alike), from `first_step` of the first. The streams resume on
  // another server of their part when theirs fails (resuming_stream.h).
  absl::StatusOr<std::unique_ptr<InputPipeline>> OpenPipeline(
      const std::vector<client::ShardSeeds>& shards, const client::EpochSchedule& schedule,
      int64_t first_step, bool train, int64_t epoch, int64_t num_epochs);
  // The stream of shard `index` (of `shard`'s part): `num_batches` batches per epoch from
  // `first_batch`, for `num_epochs` epochs from `epoch`, resuming on another server of its part.
  absl::StatusOr<std::unique_ptr<client::BatchStream>> OpenStream(
      const client::ShardSeeds& shard, size_t index, bool train, int64_t epoch, int64_t first_batch,
      int64_t num_batches, int64_t num_epochs, bool without_features);
  // --sampler gpu: the training pipeline over batches sampled on this rank's GPU
  // (gpu_sampler.h), the same as OpenPipeline's streams would carry. Reads the topology from the
  // servers the first time. FailedPrecondition for what the GPU sampler does not do
  // (heterogeneous graphs, rows not on the GPU, a build without its kernels). Under --sampler
  // auto, a topology that does not fit after all (ResourceExhausted, host or GPU memory) leaves
  // the sampling to the servers, and the log says so.
  absl::StatusOr<std::unique_ptr<InputPipeline>> OpenGpuPipeline(
      const std::vector<client::ShardSeeds>& shards, const client::EpochSchedule& schedule,
      int64_t first_step, int64_t epoch, int64_t num_epochs);
  // The GPU's graph (gpu_graph_), read and copied the first time.
  absl::Status LoadGpuGraph();
  // --sampler gpu: starts reading the topology on a thread of its own (before the feature
  // store's load, so that both go at once); TakeTopology waits for it, or reads it now where
  // it was not started. The read's errors.
  void StartTopologyRead();
  absl::StatusOr<client::GraphTopology> TakeTopology(double& read_s, double& waited_s);
  // The input pipeline's options for a training (`train`) or evaluation pass.
  // `gpu_sampled`: the pass's batches are sampled on the GPU (--prefetch auto: ResolvePrefetch).
  PipelineOptions PipelineOptionsFor(bool train, bool gpu_sampled) const;
  // A live server of a part (the registry read anew), as a broken stream resumes on one.
  client::ClientOf LiveClientOf();
  // How often this rank's first-epoch training batches visit each node.
  absl::StatusOr<std::unique_ptr<client::VisitCounts>> Presample();

  const client::TrainerOptions& options_;
  const client::TaskPlan& plan_;
  client::ServerSet& servers_;
  client::Communicator& comm_;
  Session& session_;
  const client::Shards& shards_;
  client::ProgressReporter* progress_;
  const std::string host_id_;
  int64_t steps_this_process_ = 0;
  std::unique_ptr<TrainInput> input_;
  std::shared_ptr<const FeatureStore> store_;    // --feature-store device
  std::unique_ptr<StepProfiler> profiler_;       // --profile-dir
  std::shared_ptr<StaticShapes> static_shapes_;  // --static-shapes: the training batches' shapes
  std::unique_ptr<GraphedStep> graphed_;         // --static-shapes on a GPU
  bool gpu_sampler_ = false;                     // UseGpuSampler
  bool topology_on_host_ = false;                // UseGpuSampler
  std::shared_ptr<GpuGraph> gpu_graph_;          // --sampler gpu
  struct TopologyRead;                           // --sampler gpu, until TakeTopology
  // Last: destroyed first, its thread joined before anything it reads goes away.
  std::unique_ptr<TopologyRead> topology_read_;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_EPOCH_LOOP_H_
