#ifndef GRAPHSHARD_TRAINER_GPU_MEMORY_H_
#define GRAPHSHARD_TRAINER_GPU_MEMORY_H_

// Peak GPU memory of a training epoch: the high-water mark of bytes allocated to tensors by
// LibTorch's CUDA caching allocator on one device (what torch.cuda.max_memory_allocated
// reports; the model, its gradients and Adam state, activations, and the batches the input
// pipeline holds on the device), reset at an epoch's start. Built from gpu_memory_c10.cc where
// the LibTorch has CUDA (its c10_cuda library: PyTorch's on the GPU machine), else from
// gpu_memory_none.cc (Debian's CPU-only LibTorch), which measures nothing.
// No Torch in this header. Thread-safe (the allocator's statistics are).

#include <cstdint>

#include "absl/types/optional.h"

namespace graphshard::trainer {

// Starts a new high-water mark on CUDA device `device`. No-op where nothing is measured.
void ResetPeakGpuMemory(int device);

// Bytes: the high-water mark on `device` since the last reset; nullopt where this build
// measures nothing.
absl::optional<int64_t> PeakGpuMemoryBytes(int device);

// Bytes free on CUDA device `device` now (cudaMemGetInfo: what no process holds, so without the
// caching allocator's reserved blocks); nullopt where this build cannot tell or the call fails.
absl::optional<int64_t> FreeGpuMemoryBytes(int device);

// The cudaStream_t of c10's current stream on CUDA device `device` (for a kernel of ours,
// tiered_gather.h, to queue behind torch's work); nullptr where this build has no c10 CUDA.
void* CurrentCudaStream(int device);

// Makes a high-priority stream from c10's pool the calling thread's current stream on CUDA
// device `device`: the training step's kernels then run there, and the input pipeline's work
// (its copy stream, the tiered gather; normal priority) fills the SMs the step leaves idle
// instead of holding the step's next kernel back (tests/bench/RESULTS.md, "The 10% tier: the
// gather holds the step back"). Per thread, as c10's current stream is. No-op where this build
// has no c10 CUDA.
void UseHighPriorityComputeStream(int device);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_GPU_MEMORY_H_
