#ifndef GRAPHSHARD_TRAINER_INPUT_PIPELINE_H_
#define GRAPHSHARD_TRAINER_INPUT_PIPELINE_H_

// The trainer's input pipeline for one pass (an epoch, or an evaluation): a background thread
// reads the batches of the pass from its StreamBatches streams in step order, turns them into
// tensors (in place over the gRPC message or the shared-memory mapping), converts 16-bit
// features to float32, normalises them when asked, and on a GPU copies them on a separate CUDA
// stream, straight out of registered shared memory or through pinned staging buffers; it keeps
// up to `depth` steps ready ahead of the training loop. Next() hands the steps out in order; on
// a GPU the compute stream waits (on the device, not the host) for that batch's copy. Includes
// Torch.
// Thread-safety: Next() from one thread (the training loop); the destructor stops the thread
// and cancels the streams.

#include <c10/core/Event.h>
#include <torch/torch.h>

#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/optional.h"
#include "client/batch_client.h"
#include "trainer/feature_store.h"
#include "trainer/static_shapes.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

// Where the pipeline thread's time went, for the run's metrics (seconds, summed over steps).
struct PipelineTimings {
  double stream_wait_s = 0;  // waiting in the streams' Next() (the servers, gRPC, decoding)
  double stage_s = 0;        // tensors, staging copy and copy enqueue, conversions; of it:
  double h2d_s = 0;          //   tensors, the copies to the GPU queued, DMA'd segments released
  double pad_s = 0;          //   --static-shapes: padding (static_shapes.h)
  double gather_s = 0;       //   rows gathered from the feature store, 16-bit widened, normalised
  double full_wait_s = 0;    // waiting for room (the training loop is behind)
  int64_t batches = 0;
};

struct PipelineOptions {
  int depth = 4;                       // steps kept ready ahead
  torch::Device device = torch::kCPU;  // where the tensors go

  bool normalize_features = false;  // x / max(row sum, 1)
  int64_t num_classes = 1;          // labels of seeds are checked against it
  // --feature-store device: batches come without rows (BatchTensors::x_are_ids); their rows
  // are gathered from here on the device. Null: batches carry their rows.
  std::shared_ptr<const FeatureStore> store;
  // --static-shapes: batches padded on the host to its capacities (static_shapes.h). Null: as
  // they come. Only this pipeline's thread uses it while the pipeline lives.
  std::shared_ptr<StaticShapes> static_shapes;
};

// Batches made on the pipeline's device in place of a server's stream (gpu_sampler.h): called
// on the pipeline thread with its copy stream current; nullopt at the end.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual absl::StatusOr<absl::optional<BatchTensors>> Next() = 0;
};

class InputPipeline {
 public:
  // Step s takes the next batch of streams[step_stream[s]]; -1 = a step without a batch.
  InputPipeline(std::vector<std::unique_ptr<client::BatchStream>> streams,
                std::vector<int> step_stream, const PipelineOptions& options);
  // The same over sources that make their batches on the device (null where a stream has no
  // batches); their time counts as stream_wait_s.
  InputPipeline(std::vector<std::unique_ptr<TensorSource>> sources, std::vector<int> step_stream,
                const PipelineOptions& options);
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // The next step's batch, blocking until it is ready; nullopt for a step without a batch.
  // The stream's error (naming the server), DataLoss when a stream ends early, or
  // OutOfRange past the last step.
  absl::StatusOr<absl::optional<BatchTensors>> Next();
  // So far (read it after the last Next() for the whole pass).
  PipelineTimings timings();

 private:
  struct Ready;
  void Run();
  void RunSteps(const absl::optional<c10::Stream>& copy_stream);
  // The tensors of `step`'s batch, before padding and gathering: from its stream, on the device.
  absl::StatusOr<absl::optional<BatchTensors>> Read(int64_t step, int s, double* stream_wait_s,
                                                    PipelineTimings* parts);
  // The batch of `step`; `stream_wait_s`: the time spent in the stream's Next().
  // Adds its parts of the staging time to `parts` (h2d_s, pad_s, gather_s).
  absl::StatusOr<absl::optional<BatchTensors>> Produce(int64_t step, double* stream_wait_s,
                                                       PipelineTimings* parts);

  // Batches copied by DMA straight out of registered ring segments (--h2d registered): their
  // source tensors hold the segments until an event after the copies has passed.
  struct InFlightCopy {
    c10::Event done;
    std::vector<torch::Tensor> sources;
  };
  static constexpr size_t kMaxInFlightCopies = 2;
  // Drops the sources of copies that are done, and waits for the oldest while more than
  // `keep` are in flight. The pipeline thread's.
  void ReleaseCopiedSources(size_t keep);

  std::vector<std::unique_ptr<client::BatchStream>> streams_;
  std::vector<std::unique_ptr<TensorSource>> sources_;  // or these
  const std::vector<int> step_stream_;
  const PipelineOptions options_;
  int64_t handed_out_ = 0;
  std::deque<std::unique_ptr<InFlightCopy>> in_flight_;  // the pipeline thread's

  absl::Mutex mu_;
  std::deque<std::unique_ptr<Ready>> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // the thread has returned
  PipelineTimings timings_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts after everything above is initialised
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_INPUT_PIPELINE_H_
