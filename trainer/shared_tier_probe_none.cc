#include <cstdlib>

#include "trainer/shared_tier_probe.h"

namespace graphshard::trainer {

// No CUDA compiler at build time: the shared tier cannot run, and neither can its probe.
std::string SharedTierProbeDir() {
  const char* dir = std::getenv("GRAPHSHARD_SHARED_TIER_PROBE");
  return dir == nullptr ? std::string() : std::string(dir);
}

bool ProbeSharedGather(const SharedTierProbe& probe, const ShardedGatherArgs& /*args*/,
                       int64_t call, void* /*stream*/, std::ostream& log) {
  if (call == 30) {
    log << "graphshard-trainer: shared tier probe (GPU " << probe.device
        << "): this build has no CUDA kernel\n";
  }
  return false;
}

}  // namespace graphshard::trainer
