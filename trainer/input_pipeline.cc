#include "trainer/input_pipeline.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace graphshard::trainer {

struct InputPipeline::Ready {
  absl::StatusOr<absl::optional<BatchTensors>> batch = absl::optional<BatchTensors>();
  // GPU: recorded on the copy stream after the batch's copies.
  std::unique_ptr<c10::Event> copied;
};

InputPipeline::InputPipeline(std::vector<std::unique_ptr<client::BatchStream>> streams,
                             std::vector<int> step_stream, const PipelineOptions& options)
    : streams_(std::move(streams)),
      step_stream_(std::move(step_stream)),
      options_(options),
      thread_([this] { Run(); }) {}

InputPipeline::InputPipeline(std::vector<std::unique_ptr<TensorSource>> sources,
                             std::vector<int> step_stream, const PipelineOptions& options)
    : sources_(std::move(sources)),
      step_stream_(std::move(step_stream)),
      options_(options),
      thread_([this] { Run(); }) {}

InputPipeline::~InputPipeline() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (auto& s : streams_) {
    if (s != nullptr) s->Cancel();
  }
  thread_.join();
}

void InputPipeline::Run() {
  // The device's copy stream (a pooled stream, not the one the model computes on).
  absl::optional<c10::Stream> copy_stream;
  if (options_.device.is_cuda()) {
    try {
      c10::impl::VirtualGuardImpl impl(options_.device.type());
      // Normal priority, below the step's compute stream (gpu_memory.h,
      // UseHighPriorityComputeStream): the next batches' copies and gathers fill the SMs the
      // step leaves idle. At high priority the tiered gather's blocks took every SM and the
      // step's next kernel waited for them (tests/bench/RESULTS.md, "The 10% tier").
      copy_stream = impl.getStreamFromGlobalPool(options_.device, /*isHighPriority=*/false);
    } catch (const c10::Error& e) {
      auto ready = std::make_unique<Ready>();
      ready->batch = absl::InternalError(absl::StrCat("copy stream: ", e.what_without_backtrace()));
      absl::MutexLock lock(&mu_);
      queue_.push_back(std::move(ready));
      finished_ = true;
      return;
    }
  }
  RunSteps(copy_stream);
  try {
    ReleaseCopiedSources(0);  // no segment goes back while a copy may still read it
  } catch (const c10::Error& e) {
    std::cerr << "input pipeline: waiting for batch copies: " << e.what_without_backtrace() << "\n";
  }
  absl::MutexLock lock(&mu_);
  finished_ = true;
}

void InputPipeline::RunSteps(const absl::optional<c10::Stream>& copy_stream) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  for (int64_t step = 0; step < std::ssize(step_stream_); ++step) {
    const auto wait_start = Clock::now();
    {
      absl::MutexLock lock(&mu_);
      auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || std::ssize(queue_) < options_.depth;
      };
      mu_.Await(absl::Condition(&room));
      if (stop_) return;
      timings_.full_wait_s += seconds(wait_start, Clock::now());
    }
    auto ready = std::make_unique<Ready>();
    double stream_wait_s = 0;
    PipelineTimings parts;
    const auto stage_start = Clock::now();
    try {
      absl::optional<c10::StreamGuard> guard;
      if (copy_stream.has_value()) guard.emplace(*copy_stream);
      ready->batch = Produce(step, &stream_wait_s, &parts);
      if (copy_stream.has_value() && ready->batch.ok() && ready->batch->has_value()) {
        ready->copied = std::make_unique<c10::Event>(options_.device.type());
        ready->copied->record(*copy_stream);
      }
    } catch (const c10::Error& e) {
      ready->batch = absl::InternalError(
          absl::StrCat("preparing batch of step ", step, ": ", e.what_without_backtrace()));
    }
    const bool failed = !ready->batch.ok();
    absl::MutexLock lock(&mu_);
    timings_.stream_wait_s += stream_wait_s;
    timings_.stage_s += seconds(stage_start, Clock::now()) - stream_wait_s;
    timings_.h2d_s += parts.h2d_s;
    timings_.pad_s += parts.pad_s;
    timings_.gather_s += parts.gather_s;
    ++timings_.batches;
    queue_.push_back(std::move(ready));
    if (failed) return;
  }
}

absl::StatusOr<absl::optional<BatchTensors>> InputPipeline::Read(int64_t step, int s,
                                                                 double* stream_wait_s,
                                                                 PipelineTimings* parts) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const auto read_start = std::chrono::steady_clock::now();
  absl::StatusOr<absl::optional<client::MinibatchData>> read =
      streams_[static_cast<size_t>(s)]->Next();
  *stream_wait_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - read_start).count();
  ASSIGN_OR_RETURN(absl::optional<client::MinibatchData> data, std::move(read));
  if (!data.has_value()) {
    return absl::DataLossError(
        absl::StrCat("a batch stream ended before step ", step, " (the server sent too few)"));
  }
  const auto h2d_start = Clock::now();
  ASSIGN_OR_RETURN(BatchTensors t, ToTensors(*data, options_.num_classes));
  const bool pinned = data->pinned;
  data.reset();  // the tensors hold the memory now
  if (options_.device.is_cuda()) {
    // Pinned staging (from the host allocator's cache) so the copy is a real async DMA; the
    // copy runs on the current (copy) stream. 16-bit features travel as such and widen there.
    // The staging copy is copy_ (parallel over the intra-op threads): pin_memory() copies on
    // this one thread, which bounded a trainer at ~44 batches/s (121 MB each) on the GPU
    // machine while the servers used 9% of the cores (tests/bench/RESULTS.md).
    // A batch in a ring segment registered with CUDA (--h2d registered) is copied by DMA
    // straight out of it; the segment goes back to the server only once the copies are done.
    std::vector<torch::Tensor> sources;
    t.ForEachTensor([&](torch::Tensor& x) {
      if (pinned) {
        sources.push_back(x);
        x = x.to(options_.device, /*non_blocking=*/true);
        return;
      }
      torch::Tensor staging = torch::empty(x.sizes(), x.options().pinned_memory(true));
      staging.copy_(x);
      x = staging.to(options_.device, /*non_blocking=*/true);
    });
    if (!sources.empty()) {
      // The segment is held until an event after these copies has passed, checked at the
      // next batches, rather than waiting here for all the copy stream's work (the pad and
      // gather kernels of the batches before, which share the GPU with the training step).
      c10::impl::VirtualGuardImpl impl(options_.device.type());
      auto copy = std::make_unique<InFlightCopy>(InFlightCopy{
          c10::Event(options_.device.type()), std::move(sources)});
      copy->done.record(impl.getStream(options_.device));
      in_flight_.push_back(std::move(copy));
    }
    ReleaseCopiedSources(kMaxInFlightCopies);
  }
  parts->h2d_s += since(h2d_start);
  return absl::optional<BatchTensors>(std::move(t));
}

absl::StatusOr<absl::optional<BatchTensors>> InputPipeline::Produce(int64_t step,
                                                                    double* stream_wait_s,
                                                                    PipelineTimings* parts) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const int s = step_stream_[static_cast<size_t>(step)];
  if (s < 0) return absl::optional<BatchTensors>();
  absl::optional<BatchTensors> read;
  if (sources_.empty()) {
    ASSIGN_OR_RETURN(read, Read(step, s, stream_wait_s, parts));
  } else {
    // Made on the device, on the current (copy) stream: no copy to queue.
    const auto sample_start = Clock::now();
    ASSIGN_OR_RETURN(read, sources_[static_cast<size_t>(s)]->Next());
    *stream_wait_s = since(sample_start);
    if (!read.has_value()) {
      return absl::DataLossError(
          absl::StrCat("a batch source ended before step ", step, " (it made too few)"));
    }
  }
  BatchTensors t = *std::move(read);
  if (options_.static_shapes != nullptr) {
    // Where the batch now is (the copy stream), ids before their rows are gathered.
    const auto pad_start = Clock::now();
    ASSIGN_OR_RETURN(t, options_.static_shapes->Pad(t));
    parts->pad_s += since(pad_start);
  }
  const auto gather_start = Clock::now();
  if (t.x_are_ids) {
    // Gathered on the current (copy) stream, so the batch's event covers it.
    if (options_.store == nullptr) {
      return absl::FailedPreconditionError(
          "a batch came without feature rows, but this trainer holds none (--feature-store)");
    }
    for (size_t i = 0; i < t.x.size(); ++i) {
      ASSIGN_OR_RETURN(t.x[i], options_.store->Rows(static_cast<int>(i), t.x[i], &t.tiers));
    }
    t.x_are_ids = false;
  }
  ToFloatFeatures(t);
  if (options_.normalize_features) {
    for (torch::Tensor& x : t.x) {
      if (x.size(1) > 0) x = x / x.sum(1, /*keepdim=*/true).clamp_min(1);
    }
  }
  parts->gather_s += since(gather_start);
  return absl::optional<BatchTensors>(std::move(t));
}

void InputPipeline::ReleaseCopiedSources(size_t keep) {
  while (!in_flight_.empty() && (in_flight_.size() > keep || in_flight_.front()->done.query())) {
    // c10::Event has no synchronize() in every LibTorch (Debian's 1.13): poll.
    while (!in_flight_.front()->done.query()) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    in_flight_.pop_front();
  }
}

PipelineTimings InputPipeline::timings() {
  absl::MutexLock lock(&mu_);
  return timings_;
}

absl::StatusOr<absl::optional<BatchTensors>> InputPipeline::Next() {
  if (handed_out_ >= std::ssize(step_stream_)) {
    return absl::OutOfRangeError(
        absl::StrCat("input pipeline: all ", handed_out_, " steps were handed out"));
  }
  std::unique_ptr<Ready> ready;
  {
    absl::MutexLock lock(&mu_);
    auto nonempty = [this]()
                        ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || finished_; };
    mu_.Await(absl::Condition(&nonempty));
    if (queue_.empty())
      return absl::FailedPreconditionError("input pipeline stopped after an error");
    ready = std::move(queue_.front());
    queue_.pop_front();
  }
  ++handed_out_;
  if (ready->copied != nullptr && ready->batch.ok() && ready->batch->has_value()) {
    try {
      c10::impl::VirtualGuardImpl impl(options_.device.type());
      const c10::Stream compute = impl.getStream(options_.device);
      ready->copied->block(compute);
      // Memory allocated on the copy stream is used on the compute stream: tell the allocator.
      (*ready->batch)->ForEachTensor([&](torch::Tensor& x) { x.record_stream(compute); });
    } catch (const c10::Error& e) {
      return absl::InternalError(
          absl::StrCat("waiting for a batch copy: ", e.what_without_backtrace()));
    }
  }
  return std::move(ready->batch);
}

}  // namespace graphshard::trainer
