// Where the LibTorch has CUDA: c10's caching allocator statistics. Only c10's CUDA header, not
// <torch/torch.h>: cheap to compile.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "trainer/gpu_memory.h"

namespace graphshard::trainer {

void ResetPeakGpuMemory(int device) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

absl::optional<int64_t> PeakGpuMemoryBytes(int device) {
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  // Index 0 is StatType::AGGREGATE (both pools) in every LibTorch since 1.x; the enum itself
  // moved namespace in 2.x.
  return stats.allocated_bytes[0].peak;
}

absl::optional<int64_t> FreeGpuMemoryBytes(int device) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();  // clear it; the caller then streams rows
    return absl::nullopt;
  }
  return static_cast<int64_t>(free_bytes);
}

void* CurrentCudaStream(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}

void UseHighPriorityComputeStream(int device) {
  const auto index = static_cast<c10::DeviceIndex>(device);
  c10::cuda::setCurrentCUDAStream(c10::cuda::getStreamFromPool(/*isHighPriority=*/true, index));
}

}  // namespace graphshard::trainer
