#include "trainer/tiered_gather.h"

namespace graphshard::trainer {

// No CUDA compiler at build time: the store gathers with torch's index_select.
bool LaunchTieredGather(const TieredGatherArgs& /*args*/, void* /*stream*/, std::string* error) {
  *error = "this build has no CUDA kernel for the tiered gather";
  return false;
}

bool LaunchShardedGather(const ShardedGatherArgs& /*args*/, void* /*stream*/, std::string* error) {
  *error = "this build has no CUDA kernel for the shared device tier";
  return false;
}

}  // namespace graphshard::trainer
