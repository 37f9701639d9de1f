// Where the LibTorch has CUDA: c10's caching allocator statistics. Only c10's CUDA header, not
// <torch/torch.h>: cheap to compile.
#include <c10/cuda/CUDACachingAllocator.h>

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

}  // namespace graphshard::trainer
