#ifndef GRAPHSHARD_TRAINER_RANK_HEARTBEATS_H_
#define GRAPHSHARD_TRAINER_RANK_HEARTBEATS_H_

// Which trainer was lost, when a collective fails (issue 17, point 4). Every rank counts a
// heartbeat in the rendezvous store (key "graphshard/heartbeat/<rank>") every `every`, from its
// own thread and its own store connection. After a failed collective, DiagnoseLoss() reads
// every other rank's count twice, 2.5 x `every` apart: a rank whose count did not move is named
// lost; a store that cannot be reached names rank 0, which hosts it. Torch-free; thread-safe.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "trainer/communicator.h"

namespace graphshard::trainer {

class RankHeartbeats {
 public:
  // `store` is this rank's own connection (not the one a process group uses); `where` names the
  // store for messages (MASTER_ADDR:MASTER_PORT).
  RankHeartbeats(std::unique_ptr<KeyValueStore> store, int rank, int world_size,
                 std::string where, absl::Duration every = absl::Seconds(1));
  ~RankHeartbeats();  // stops the thread (at most one store call, bounded by its timeout)
  RankHeartbeats(const RankHeartbeats&) = delete;
  RankHeartbeats& operator=(const RankHeartbeats&) = delete;

  // A sentence for the failure message: "lost rank(s): 1 (no heartbeat for 2.5 s)", "the
  // rendezvous store at H:P (hosted by rank 0) is unreachable: rank 0 is lost (...)", or
  // "every other rank still beats (...)". Blocks 2.5 x `every`.
  std::string DiagnoseLoss();

  static std::string Key(int rank);

 private:
  void Loop();
  // Every other rank's count, -1 where it has none yet; an error when the store fails.
  absl::StatusOr<std::vector<int64_t>> ReadCounts();

  std::unique_ptr<KeyValueStore> store_;
  const int rank_;
  const int world_size_;
  const std::string where_;
  const absl::Duration every_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// `comm` whose failed collectives name the lost rank(s): the status of the first failure gets
// "; " + heartbeats->DiagnoseLoss() appended (same code).
std::unique_ptr<Communicator> WithLossDiagnosis(std::unique_ptr<Communicator> comm,
                                                std::unique_ptr<RankHeartbeats> heartbeats);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_RANK_HEARTBEATS_H_
