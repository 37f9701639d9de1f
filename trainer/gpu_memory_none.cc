#include "trainer/gpu_memory.h"

namespace graphshard::trainer {

// A LibTorch without CUDA (Debian's): the trainer runs on the CPU, there is no GPU memory.
void ResetPeakGpuMemory(int /*device*/) {}

absl::optional<int64_t> PeakGpuMemoryBytes(int /*device*/) { return absl::nullopt; }

absl::optional<int64_t> FreeGpuMemoryBytes(int /*device*/) { return absl::nullopt; }

void* CurrentCudaStream(int /*device*/) { return nullptr; }

void UseHighPriorityComputeStream(int /*device*/) {}

}  // namespace graphshard::trainer
