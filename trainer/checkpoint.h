#ifndef GRAPHSHARD_TRAINER_CHECKPOINT_H_
#define GRAPHSHARD_TRAINER_CHECKPOINT_H_

// Training checkpoints: <dir>/checkpoint.pt, one LibTorch archive with the model's parameters,
// the optimizer's state (Adam moments and step counts), and the stream position: the epoch to
// continue and its first step not yet taken (batch b of an epoch is a function of the epoch and
// b alone, so the streams reopen there with first_batch), plus that epoch's running sums for
// its report. Written atomically (temp file, fsync, rename): a crash leaves the previous
// checkpoint intact. Rank 0 writes; every rank reads (the folder is shared when ranks are on
// several hosts). No Torch in this header: it saves and loads a session's state
// (internal/session_state.h). Not thread-safe.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"

namespace graphshard::trainer {

struct CheckpointPosition {
  int64_t epoch = 1;  // the epoch to continue (1-based)
  int64_t step = 0;   // its first step not yet taken
  int64_t global_step = 0;
  // The epoch's training sums so far over all ranks: sum of loss * seeds, correct, seeds.
  double loss_sum = 0, correct = 0, seen = 0;
  // The settings a resume must share (config_fingerprint.h); compared as a string.
  std::string config = "";
};

struct SessionState;  // internal/session_state.h

std::string CheckpointPath(const std::string& dir);

// Creates `dir` if needed. Internal naming the file on an I/O or serialisation error.
// Saves the state's model parameters and optimizer state.
absl::Status SaveCheckpoint(const std::string& dir, SessionState& state,
                            const CheckpointPosition& position);

// nullopt when `dir` holds no checkpoint. Loads the parameters and optimizer state into `state`
// (onto its device). FailedPrecondition when the checkpoint's config differs from `config`
// (another run's folder); DataLoss naming the file when it cannot be read.
absl::StatusOr<absl::optional<CheckpointPosition>> LoadCheckpoint(const std::string& dir,
                                                                  const std::string& config,
                                                                  SessionState& state);

// --infer: the model parameters of `dir`'s checkpoint into `state.model` (not the optimizer),
// after `check_config` accepted the checkpoint's config fingerprint (its error is returned).
// NotFound naming the file when there is none; FailedPrecondition naming the first parameter
// whose shape differs (both shapes: the graph's feature or class dims) or that the checkpoint
// lacks; DataLoss when it cannot be read.
absl::Status LoadCheckpointModel(
    const std::string& dir, SessionState& state,
    const std::function<absl::Status(const std::string& config)>& check_config);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_CHECKPOINT_H_
