#include "trainer/mean_aggregate_kernel.h"

namespace graphshard::trainer {

// No CUDA compiler at build time: SAGE aggregates with torch's operators.
bool MeanAggregateKernelBuilt() { return false; }

bool LaunchMeanAggregate(const MeanAggregateArgs& /*args*/, void* /*stream*/,
                         std::string* error) {
  *error = "this build has no CUDA kernel for the mean aggregation";
  return false;
}

bool LaunchMeanAggregateBackward(const MeanAggregateArgs& /*args*/, void* /*stream*/,
                                 std::string* error) {
  *error = "this build has no CUDA kernel for the mean aggregation";
  return false;
}

}  // namespace graphshard::trainer
