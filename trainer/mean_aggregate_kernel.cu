#include <cuda_runtime.h>

#include <algorithm>

#include "trainer/mean_aggregate_kernel.h"

namespace graphshard::trainer {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int64_t kEdgesPerWarp = 32;

// Calls body(begin, end, lane) for each run of 32 consecutive edges [begin, end) this thread's
// warp takes (a grid-stride loop over the runs), lane: the thread's lane in its warp.
template <typename Body>
__device__ void ForEachWarpOfEdges(int64_t num_edges, Body body) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t w = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       w * kEdgesPerWarp < num_edges; w += warps) {
    const int64_t begin = w * kEdgesPerWarp;
    body(begin, min(num_edges, begin + kEdgesPerWarp), lane);
  }
}

// One warp per 32 consecutive edges, the lanes over the columns (coalesced row reads). Each
// lane sums a run of edges into the same destination in a register and adds the run's mean
// share once: with a batch's edges grouped by destination (fanout 5-15 per row) that is one
// atomic add per destination row and column instead of one per edge. Edges in any order are
// still right (more, shorter runs).
__global__ void MeanAggregateKernel(MeanAggregateArgs a) {
  ForEachWarpOfEdges(a.num_edges, [&](int64_t begin, int64_t end, int lane) {
    for (int64_t c = lane; c < a.dim; c += 32) {
      float sum = 0.0f;
      int64_t row = a.dst[begin];
      for (int64_t e = begin; e < end; ++e) {
        const int64_t d = a.dst[e];
        if (d != row) {  // the same for every lane: no divergence
          atomicAdd(a.out + row * a.dim + c, sum / a.divisor[row]);
          sum = 0.0f;
          row = d;
        }
        sum += a.in[a.src[e] * a.dim + c];
      }
      atomicAdd(a.out + row * a.dim + c, sum / a.divisor[row]);
    }
  });
}

// The transpose: each edge adds its destination's gradient share to its source's row. Sources
// rarely repeat within 32 edges, so no runs; a warp's adds to one row are 32 consecutive words.
__global__ void MeanAggregateBackwardKernel(MeanAggregateArgs a) {
  ForEachWarpOfEdges(a.num_edges, [&](int64_t begin, int64_t end, int lane) {
    for (int64_t e = begin; e < end; ++e) {
      const int64_t d = a.dst[e];
      const float scale = 1.0f / a.divisor[d];
      const float* from = a.in + d * a.dim;
      float* to = a.out + a.src[e] * a.dim;
      for (int64_t c = lane; c < a.dim; c += 32) atomicAdd(to + c, from[c] * scale);
    }
  });
}

unsigned Blocks(int64_t num_edges) {
  const int64_t warps = (num_edges + kEdgesPerWarp - 1) / kEdgesPerWarp;
  return static_cast<unsigned>(
      std::clamp<int64_t>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock, 1, 1 << 20));
}

template <typename Kernel>
bool Launch(Kernel kernel, const MeanAggregateArgs& a, void* stream, std::string* error) {
  if (a.num_edges == 0 || a.dim == 0) return true;
  if (a.in == nullptr || a.src == nullptr || a.dst == nullptr || a.divisor == nullptr ||
      a.out == nullptr || a.num_edges < 0 || a.dim < 0) {
    *error = "mean aggregation: a null array or a negative size";
    return false;
  }
  kernel<<<Blocks(a.num_edges), kWarpsPerBlock * 32, 0, static_cast<cudaStream_t>(stream)>>>(a);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    *error = std::string("mean aggregation kernel: ") + cudaGetErrorString(err);
    return false;
  }
  return true;
}

}  // namespace

bool MeanAggregateKernelBuilt() { return true; }

bool LaunchMeanAggregate(const MeanAggregateArgs& args, void* stream, std::string* error) {
  return Launch(MeanAggregateKernel, args, stream, error);
}

bool LaunchMeanAggregateBackward(const MeanAggregateArgs& args, void* stream,
                                 std::string* error) {
  return Launch(MeanAggregateBackwardKernel, args, stream, error);
}

}  // namespace graphshard::trainer
