#ifndef GRAPHSHARD_TRAINER_MEAN_AGGREGATE_KERNEL_H_
#define GRAPHSHARD_TRAINER_MEAN_AGGREGATE_KERNEL_H_

// SAGE's mean aggregation on a GPU as one CUDA kernel each way (sage_model.h, MeanAggregate):
//   forward:  out[dst[e]] += x[src[e]] / divisor[dst[e]]   (out [num_dst, dim], zeroed)
//   backward: grad_x[src[e]] += grad_out[dst[e]] / divisor[dst[e]]   (grad_x zeroed)
// torch's form (index_select, a zeroed sum, index_add, a division; and their backward) writes
// the E x dim gathered rows to memory and reads them back, and costs the CPU about a dozen
// operators per layer; this reads each source row once and adds it where it goes. The adds are
// atomic, so the order of a row's terms varies from run to run: not for --deterministic
// (sage_model.cc keeps torch's form there). A warp walks 32 consecutive edges and adds a run of
// edges into the same row in registers first (a batch's edges come grouped by destination).
// Built from mean_aggregate_kernel.cu where CMake finds a CUDA compiler, else
// mean_aggregate_kernel_none.cc (then the model uses torch's form). No Torch and no CUDA
// headers here. Indexes are trusted: rows of x / out (the batch's wire format checked them).

#include <cstdint>
#include <string>

namespace graphshard::trainer {

struct MeanAggregateArgs {
  const float* in = nullptr;       // forward: x [rows, dim]; backward: grad_out [num_dst, dim]
  const int64_t* src = nullptr;    // [num_edges], rows of x
  const int64_t* dst = nullptr;    // [num_edges], rows of out
  const float* divisor = nullptr;  // [>= num_dst], each destination's in-degree, at least 1
  int64_t num_edges = 0;
  int64_t dim = 0;
  float* out = nullptr;  // forward: [num_dst, dim]; backward: grad_x [rows, dim]; zeroed
};

// Whether this build has the kernels (a CUDA compiler was found).
bool MeanAggregateKernelBuilt();

// Queue on CUDA stream `stream` (a cudaStream_t). False, with the reason, when this build has
// no kernel or the launch fails.
bool LaunchMeanAggregate(const MeanAggregateArgs& args, void* stream, std::string* error);
bool LaunchMeanAggregateBackward(const MeanAggregateArgs& args, void* stream, std::string* error);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_MEAN_AGGREGATE_KERNEL_H_
