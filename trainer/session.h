#ifndef GRAPHSHARD_TRAINER_SESSION_H_
#define GRAPHSHARD_TRAINER_SESSION_H_

// A training session of one rank: its device, the model (built through the registry, seeded,
// then rank 0's weights broadcast so every rank starts alike), its Adam optimizer, and the
// checkpoint that saves or resumes them. No Torch in this header: the Torch side
// (internal/session_state.h) is for the epoch loop and the checkpoint. Not thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "client/communicator.h"
#include "client/data_types.h"
#include "client/options.h"
#include "trainer/checkpoint.h"

namespace graphshard::trainer {

// Where the model runs: the CPU, or cuda:(local_rank mod visible devices).
struct DeviceChoice {
  bool cuda = false;
  int index = 0;
  std::string name = "cpu";  // "cpu", "cuda:0"
};

// FailedPrecondition for --device cuda without a CUDA device (or a LibTorch without CUDA).
absl::StatusOr<DeviceChoice> PickDevice(const client::TrainerOptions& options, int local_rank);

class Session {
 public:
  // Sets torch's intra-op threads (--threads), makes `device` current for the session's life,
  // builds the model (`num_layers` layers, TaskPlan) and the optimizer. A collective: every rank
  // calls it. `config` (config_fingerprint.h) is what its checkpoints carry. InvalidArgument
  // when the model does not fit the graph (model_registry.h).
  static absl::StatusOr<std::unique_ptr<Session>> Create(const client::TrainerOptions& options,
                                                         const DeviceChoice& device,
                                                         const client::ServerMetadata& metadata,
                                                         int64_t num_layers,
                                                         client::Communicator& comm,
                                                         std::string config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // --resume: loads --checkpoint-dir's checkpoint (nullopt: there is none) and continues its
  // global step. The errors of LoadCheckpoint.
  absl::StatusOr<absl::optional<CheckpointPosition>> Resume();
  // Saves to --checkpoint-dir at `position` (its config and global step are the session's).
  absl::Status Save(CheckpointPosition position);

  const std::string& config() const { return config_; }
  // Optimizer steps taken, across resumes.
  int64_t global_step() const;
  // FNV-1a 64 over all parameters' bytes, in order (16 hex digits).
  std::string WeightsFingerprint() const;

  // The Torch side, for the epoch loop.
  SessionState& state() { return *state_; }

 private:
  Session(const client::TrainerOptions& options, std::unique_ptr<SessionState> state,
          std::string config);

  const client::TrainerOptions& options_;
  std::unique_ptr<SessionState> state_;
  std::string config_;
};

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_SESSION_H_
