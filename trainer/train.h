#ifndef GRAPHSHARD_TRAINER_TRAIN_H_
#define GRAPHSHARD_TRAINER_TRAIN_H_

// The training run of one trainer rank: reads its shard of the splits, trains GraphSAGE with
// Adam over minibatches sampled by the servers, synchronises gradients through `comm`, and
// evaluates. Rank 0 writes the per-epoch lines and the final JSON line to `out`; every rank
// writes logs and its weights fingerprint to `log`. No Torch in this header.

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
  int epochs = 0;
  std::string weights_fingerprint;  // FNV-1a 64 of all parameters' bytes, in order
};

// Errors: any RPC, collective or data error, naming what failed (e.g. "SampleMinibatch to
// server 127.0.0.1:4242: ..."); Torch exceptions become Internal. Never throws.
absl::StatusOr<TrainSummary> RunTraining(const TrainerOptions& options, ServerSet& servers,
                                         Communicator& comm, std::ostream& out, std::ostream& log);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_TRAIN_H_
