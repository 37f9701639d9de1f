#ifndef GRAPHSHARD_TRAINER_TRAIN_H_
#define GRAPHSHARD_TRAINER_TRAIN_H_

// The training run of one trainer rank: reads its shard of the splits, streams minibatches from
// its servers (one StreamBatches call per server per epoch, every rank the same number of
// steps), trains the model with Adam, synchronises gradients through `comm`, evaluates,
// checkpoints and resumes. Rank 0 writes the per-epoch lines and the final JSON line to `out`
// and the metrics file; every rank writes logs and its weights fingerprint to `log`. No Torch
// in this header.

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/communicator.h"
#include "trainer/options.h"
#include "trainer/server_set.h"

namespace graphshard::trainer {

struct TrainSummary {
  double loss = 0;       // last epoch, mean over the seeds of all ranks
  double train_acc = 0;  // last epoch
  double val_acc = 0;    // final evaluation, over all ranks
  double test_acc = 0;
  double seeds_per_s = 0;  // training seeds per second, summed over ranks
  double data_wait_fraction = 0;  // time blocked waiting for batches / training time (all ranks)
  double step_time_s = 0;         // mean training step time (slowest rank per epoch)
  int epochs = 0;
  std::string weights_fingerprint;  // FNV-1a 64 of all parameters' bytes, in order
};

struct RunEnvironment {
  int local_rank = 0;  // --device cuda: cuda:(local_rank % visible devices)
  bool stdout_is_terminal = false;  // progress drawn in place, else plain lines
};

// Errors: any RPC, collective or data error, naming what failed (e.g. "StreamBatches to server
// 127.0.0.1:4242: ..."); Torch exceptions become Internal. Aborted when --stop-after-steps
// stopped the run (after its checkpoint, if one was due). Never throws.
absl::StatusOr<TrainSummary> RunTraining(const TrainerOptions& options, ServerSet& servers,
                                         Communicator& comm, std::ostream& out, std::ostream& log,
                                         const RunEnvironment& env = {});

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_TRAIN_H_
