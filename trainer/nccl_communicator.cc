// The NCCL side of communicator.h (built only where CUDA and NCCL are found; see
// nccl_unavailable.cc). No Torch here: the CUDA runtime and NCCL's C API only. Collectives run
// on the stream the caller's training step computes on (NcclOptions::stream_of; the legacy
// default stream without one), so gradients are complete before the all-reduce starts and the
// optimizer step sees its result. Each call waits
// for completion by polling, so that a dead or late peer becomes an error after timeout_s
// (ncclCommAbort) instead of a hang. QueueAllReduce (the gradients) waits only until NCCL has
// put the all-reduce on the stream, and leaves the wait for its completion to a later call, so
// that the CPU queues the next steps' kernels while the GPU runs this one.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/communicator.h"
#include "common/status_macros.h"
#include "trainer/communicators.h"

namespace graphshard::trainer {
namespace {

absl::Status CudaStatus(cudaError_t e, absl::string_view what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": CUDA error ", cudaGetErrorString(e)));
}

// The communicator is non-blocking (so that init and collectives can time out): calls may
// return ncclInProgress, which is not an error; Wait polls until the work is done.
absl::Status NcclStatus(ncclResult_t r, absl::string_view what) {
  if (r == ncclSuccess || r == ncclInProgress) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(what, ": NCCL error ", ncclGetErrorString(r)));
}

ncclRedOp_t ToNccl(client::ReduceOp op) { return op == client::ReduceOp::kMax ? ncclMax : ncclSum; }

class NcclCommunicator final : public client::Communicator {
 public:
  NcclCommunicator(int rank, int world_size, int device, const NcclOptions& options,
                   ncclComm_t comm, std::unique_ptr<client::KeyValueStore> store)
      : rank_(rank),
        world_size_(world_size),
        device_(device),
        timeout_s_(options.timeout_s),
        queue_depth_(options.queue_depth),
        stream_of_(options.stream_of),
        comm_(comm),
        store_(std::move(store)) {}
  ~NcclCommunicator() override {
    for (cudaEvent_t e : queued_done_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (scratch_ != nullptr) cudaFree(scratch_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  const char* name() const override { return "nccl"; }
  client::MemorySpace float_memory() const override { return client::MemorySpace::kCuda; }

  absl::Status AllReduce(absl::Span<float> data, client::ReduceOp op) override {
    if (data.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(Usable());
    RETURN_IF_ERROR(NcclStatus(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32,
                                             ToNccl(op), comm_, Stream()),
                               "ncclAllReduce"));
    return Wait("all-reduce");
  }
  // Left running on the stream: what LibTorch queues after it (the division, the optimizer
  // step) runs after it on the GPU. The communicator is non-blocking, so ncclAllReduce may
  // return ncclInProgress before the kernel is on the stream: Enqueued() waits for that first.
  // Commit 8267a9a recorded its event right away, ahead of the all-reduce, and the two ranks'
  // weights diverged (tests/bench/RESULTS.md, "NCCL ranks diverged"). At most queue_depth_
  // all-reduces are left running: the call that would leave one more first waits (bounded) for
  // the oldest, so the CPU stays at most that many steps ahead of its GPU, and a rank whose CPU
  // is late one step does not hold up the other's CPU at once (the GPUs still meet in every
  // all-reduce). NcclOptions::queue_depth sets it (GRAPHSHARD_NCCL_QUEUE_DEPTH; 0: wait for
  // every all-reduce).
  absl::Status QueueAllReduce(absl::Span<float> data, client::ReduceOp op) override {
    if (queue_depth_ == 0) return AllReduce(data, op);
    if (data.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(Usable());
    if (queued_done_.empty()) {
      queued_done_.resize(static_cast<size_t>(queue_depth_), nullptr);
      for (cudaEvent_t& e : queued_done_) {
        RETURN_IF_ERROR(
            CudaStatus(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate"));
      }
    }
    if (queued_ == queue_depth_) {  // the oldest of the ring must be done before it is reused
      cudaEvent_t oldest = queued_done_[next_];
      RETURN_IF_ERROR(Poll("queued all-reduce", [oldest] { return cudaEventQuery(oldest); }));
      --queued_;
    }
    const cudaStream_t stream = Stream();
    RETURN_IF_ERROR(NcclStatus(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32,
                                             ToNccl(op), comm_, stream),
                               "ncclAllReduce"));
    RETURN_IF_ERROR(Enqueued("all-reduce"));
    RETURN_IF_ERROR(CudaStatus(cudaEventRecord(queued_done_[next_], stream), "cudaEventRecord"));
    next_ = (next_ + 1) % queued_done_.size();
    ++queued_;
    return absl::OkStatus();
  }
  // Waits for every queued all-reduce: the newest is on the same stream after the others (the
  // training thread's compute stream, which does not change during a run).
  absl::Status Flush() override {
    if (queued_ == 0) return absl::OkStatus();
    RETURN_IF_ERROR(Usable());
    cudaEvent_t newest = queued_done_[(next_ + queued_done_.size() - 1) % queued_done_.size()];
    RETURN_IF_ERROR(Poll("queued all-reduce", [newest] { return cudaEventQuery(newest); }));
    queued_ = 0;
    return absl::OkStatus();
  }
  absl::Status AllReduce(absl::Span<double> data, client::ReduceOp op) override {
    return HostAllReduce(data.data(), data.size() * sizeof(double), data.size(), ncclFloat64, op);
  }
  absl::Status AllReduce(absl::Span<int64_t> data, client::ReduceOp op) override {
    return HostAllReduce(data.data(), data.size() * sizeof(int64_t), data.size(), ncclInt64, op);
  }
  absl::Status Broadcast(absl::Span<float> data, int root) override {
    if (data.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(Usable());
    RETURN_IF_ERROR(NcclStatus(
        ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat32, root, comm_, Stream()),
        "ncclBroadcast"));
    return Wait("broadcast");
  }

 private:
  absl::Status Usable() {
    if (aborted_) return absl::FailedPreconditionError("NCCL communicator was aborted earlier");
    return CudaStatus(cudaSetDevice(device_), "cudaSetDevice");
  }

  // Small host buffers (metrics, counts) go through a device scratch buffer.
  absl::Status HostAllReduce(void* host, size_t bytes, size_t count, ncclDataType_t type,
                             client::ReduceOp op) {
    if (count == 0) return absl::OkStatus();
    RETURN_IF_ERROR(Usable());
    if (bytes > scratch_bytes_) {
      if (scratch_ != nullptr) cudaFree(scratch_);
      scratch_ = nullptr;
      RETURN_IF_ERROR(CudaStatus(cudaMalloc(&scratch_, bytes), "cudaMalloc"));
      scratch_bytes_ = bytes;
    }
    const cudaStream_t stream = Stream();
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(scratch_, host, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync"));
    RETURN_IF_ERROR(
        NcclStatus(ncclAllReduce(scratch_, scratch_, count, type, ToNccl(op), comm_, stream),
                   "ncclAllReduce"));
    RETURN_IF_ERROR(Wait("all-reduce"));
    return CudaStatus(cudaMemcpy(host, scratch_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

  // The caller's compute stream (NcclOptions::stream_of), else the legacy default stream.
  cudaStream_t Stream() const {
    void* s = stream_of_ ? stream_of_(device_) : nullptr;
    return s != nullptr ? static_cast<cudaStream_t>(s) : cudaStreamLegacy;
  }

  // Waits for everything queued on the compute stream (a queued all-reduce too).
  absl::Status Wait(absl::string_view what) {
    const cudaStream_t stream = Stream();
    RETURN_IF_ERROR(Poll(what, [stream] { return cudaStreamQuery(stream); }));
    queued_ = 0;
    return absl::OkStatus();
  }

  // Waits until NCCL has queued the last call's work on the stream (ncclInProgress over), not
  // for the work itself: Poll's query reports done at once.
  absl::Status Enqueued(absl::string_view what) {
    return Poll(what, [] { return cudaSuccess; });
  }

  // Polls `query` (a CUDA stream or event query) until it reports done, NCCL reports an error or
  // timeout_s passes; the communicator is aborted on the latter two.
  template <typename Query>
  absl::Status Poll(absl::string_view what, Query query) {
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async == ncclSuccess) {
        cudaError_t q = query();
        if (q == cudaSuccess) return absl::OkStatus();
        if (q != cudaErrorNotReady) return CudaStatus(q, absl::StrCat("NCCL ", what));
      }
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if ((async != ncclSuccess && async != ncclInProgress) || waited > timeout_s_) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        aborted_ = true;
        return absl::UnavailableError(
            absl::StrCat("NCCL ", what, " on rank ", rank_, " of ", world_size_,
                         " failed (a peer trainer died "
                         "or is late?): ",
                         async != ncclSuccess ? ncclGetErrorString(async) : "timed out after ",
                         async != ncclSuccess ? "" : absl::StrCat(timeout_s_, "s")));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  int rank_;
  int world_size_;
  int device_;
  double timeout_s_;
  int queue_depth_;  // all-reduces QueueAllReduce may leave running (0: none)
  std::function<void*(int)> stream_of_;
  ncclComm_t comm_;
  std::unique_ptr<client::KeyValueStore> store_;  // kept: rank 0 hosts it for the others
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  bool aborted_ = false;
  // The ring of events recorded after the queued all-reduces; queued_ of them, the newest at
  // next_ - 1, are not known to be done.
  std::vector<cudaEvent_t> queued_done_;
  size_t next_ = 0;
  int queued_ = 0;
};

}  // namespace

bool HaveNccl() { return true; }

absl::StatusOr<std::unique_ptr<client::Communicator>> CreateNcclCommunicator(
    const client::RendezvousConfig& config, std::unique_ptr<client::KeyValueStore> store,
    const NcclOptions& options) {
  int count = 0;
  RETURN_IF_ERROR(CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (count < 1) return absl::FailedPreconditionError("NCCL: no CUDA device visible");
  const int device = options.local_rank % count;
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), absl::StrCat("cudaSetDevice(", device, ")")));
  ncclUniqueId id;
  const std::string key = "graphshard/nccl_unique_id";
  if (config.rank == 0) {
    RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    RETURN_IF_ERROR(store->Set(key, std::string(reinterpret_cast<const char*>(&id), sizeof(id))));
  } else {
    ASSIGN_OR_RETURN(std::string bytes, store->Get(key));
    if (bytes.size() != sizeof(id)) {
      return absl::DataLossError(
          absl::StrCat("NCCL unique id from the store has ", bytes.size(), " bytes"));
    }
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  // Non-blocking init, polled with a deadline: a peer that never joins (it died after the unique
  // id exchange) becomes an error after timeout_s instead of a hang in ncclCommInitRank.
  ncclComm_t comm = nullptr;
  ncclConfig_t nccl_config = NCCL_CONFIG_INITIALIZER;
  nccl_config.blocking = 0;
  const std::string what =
      absl::StrCat("ncclCommInitRank (rank ", config.rank, " of ", config.world_size,
                   ", cuda:", device, "; one rank per GPU)");
  RETURN_IF_ERROR(NcclStatus(
      ncclCommInitRankConfig(&comm, config.world_size, id, config.rank, &nccl_config), what));
  const auto start = std::chrono::steady_clock::now();
  ncclResult_t state = ncclInProgress;
  while (true) {
    ncclCommGetAsyncError(comm, &state);
    if (state != ncclInProgress) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        options.timeout_s) {
      ncclCommAbort(comm);
      return absl::UnavailableError(
          absl::StrCat(what, ": not every trainer joined within ", options.timeout_s, "s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (state != ncclSuccess) {
    ncclCommAbort(comm);
    return NcclStatus(state, what);
  }
  return std::unique_ptr<client::Communicator>(new NcclCommunicator(
      config.rank, config.world_size, device, options, comm, std::move(store)));
}

}  // namespace graphshard::trainer
