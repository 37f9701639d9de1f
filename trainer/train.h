#ifndef GRAPHSHARD_TRAINER_TRAIN_H_
#define GRAPHSHARD_TRAINER_TRAIN_H_

// The training run of one trainer rank: reads its shard of the splits (shards.h), builds its
// session (session.h: device, model, optimizer, resume), runs the epochs (epoch_loop.h: one
// StreamBatches call per server, every rank the same number of steps, gradients synchronised
// through `comm`), evaluates, checkpoints, and reports (report.h): rank 0 writes the per-epoch
// lines and the final JSON line to `out` and the metrics file; every rank writes logs and its
// weights fingerprint to `log`. No Torch in this header.

#include <ostream>

#include "absl/status/statusor.h"
#include "client/communicator.h"
#include "client/options.h"
#include "client/report.h"
#include "client/server_set.h"

namespace graphshard::trainer {

struct RunEnvironment {
  int local_rank = 0;            // --device cuda: cuda:(local_rank % visible devices)
  bool log_is_terminal = false;  // the log (stderr) is a terminal: progress drawn in place
};

// Errors: any RPC, collective or data error, naming what failed (e.g. "StreamBatches to server
// 127.0.0.1:4242: ..."); Torch exceptions become Internal. Aborted when --stop-after-steps
// stopped the run (after its checkpoint, if one was due). Never throws.
absl::StatusOr<client::TrainSummary> RunTraining(const client::TrainerOptions& options,
                                                 client::ServerSet& servers,
                                                 client::Communicator& comm, std::ostream& out,
                                                 std::ostream& log, const RunEnvironment& env = {});

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_TRAIN_H_
