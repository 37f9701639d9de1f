#ifndef GRAPHSHARD_CLIENT_RENDEZVOUS_H_
#define GRAPHSHARD_CLIENT_RENDEZVOUS_H_

// Where this trainer sits in the job: read from the standard torch.distributed environment
// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK), falling back to SLURM's
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) for each variable the standard one lacks, as the
// PyG SLURM tutorials do. With nothing set: a single process (rank 0 of 1 on 127.0.0.1).

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace graphshard::client {

struct RendezvousConfig {
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 29500;  // only used when world_size > 1
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
};

// Returns the value of an environment variable, or nullopt when it is unset.
using EnvLookup = std::function<absl::optional<std::string>(absl::string_view name)>;

// The process environment (getenv).
EnvLookup ProcessEnv();

// InvalidArgument, naming the variable and its value, for non-numbers, WORLD_SIZE < 1,
// RANK outside [0, WORLD_SIZE), LOCAL_RANK < 0, a port outside 1-65535, an empty MASTER_ADDR,
// or WORLD_SIZE > 1 with no MASTER_PORT (the ranks could not meet).
absl::StatusOr<RendezvousConfig> ParseRendezvous(const EnvLookup& env);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_RENDEZVOUS_H_
