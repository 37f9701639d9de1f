#ifndef GRAPHSHARD_TRAINER_SHARED_TIER_PROBE_H_
#define GRAPHSHARD_TRAINER_SHARED_TIER_PROBE_H_

// A diagnostic of the shared device tier (feature_store.h, --device-tier shared), on when
// GRAPHSHARD_SHARED_TIER_PROBE names a folder (trainer/README.md, "Profiling"): it times the
// tier's gather kernel alone on the device, for the batch's rows and for parts of them, so a
// slow shared tier can be told apart from its cause. No CUDA in the build: it reports that.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "trainer/tiered_gather.h"

namespace graphshard::trainer {

struct SharedTierProbe {
  int device = 0;                // this GPU
  std::vector<uint64_t> shares;  // per share: its address as this GPU reads it
  int64_t own_share = 0;         // the index of this GPU's own share
  int64_t num_rows = 0;          // rows of the node type, over all shares
  std::string dir;               // where the batch's ids are written
};

// The probe folder from the environment; empty when the probe is off.
std::string SharedTierProbeDir();

// Called for every gather of the shared tier, `call` counting them from 0. On call 30 it
// reports, one line each on `log`: the whole gather timed alone (the stream's work done
// first, then the kernel's time between two events); the own share's rows alone and the other
// shares' rows alone; as many uniform rows of each share; and of a fresh allocation of one
// share's size on each GPU of the group (made by this process, peer access enabled: it stays
// enabled); then the batch's rows again (the cases wrote over them); and it writes the batch's
// ids (int64) to DIR/shared_ids.<GPU>.bin. On every 100th call after
// that it reports the whole gather's time. True when it launched the gather itself (the
// caller must not launch it again); false otherwise, and on its own failures (logged).
bool ProbeSharedGather(const SharedTierProbe& probe, const ShardedGatherArgs& args, int64_t call,
                       void* stream, std::ostream& log);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_SHARED_TIER_PROBE_H_
