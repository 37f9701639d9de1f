#ifndef GRAPHSHARD_CLIENT_RANK_HEARTBEATS_H_
#define GRAPHSHARD_CLIENT_RANK_HEARTBEATS_H_

// Which trainer was lost, when a collective fails. Every rank counts a
// heartbeat in the rendezvous store (key "graphshard/heartbeat/<rank>") every `every`, from its
// own thread and its own store connection. After a failed collective, DiagnoseLoss() reads
// every other rank's count twice, 2.5 x `every` apart: a rank whose count did not move is named
// lost; a store that cannot be reached, or does not answer within `store_deadline`, names rank
// 0, which hosts it.
//
// No store call can hang the trainer: every call of the rendezvous store's client
// (rendezvous_store.h, gRPC) has a deadline (`store_deadline` for this connection). The heartbeat
// thread is still detached and owns the connection (shared state), and DiagnoseLoss still waits
// for its reads on a deadline of its own: c10d's TCPStore client, which this store replaced,
// blocked in a socket read far past its timeout when the network to rank 0 was cut
// (e2e.netns_multihost), and the diagnosis must not depend on any one client keeping its
// deadlines. Torch-free; thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/communicator.h"

namespace graphshard::client {

class RankHeartbeats {
 public:
  // `store` is this rank's own connection (not the one a process group uses); `where` names the
  // store for messages (MASTER_ADDR:MASTER_PORT).
  RankHeartbeats(std::unique_ptr<KeyValueStore> store, int rank, int world_size, std::string where,
                 absl::Duration every = absl::Seconds(1),
                 absl::Duration store_deadline = absl::Seconds(5));
  ~RankHeartbeats();  // stops the beats; never waits for a store call
  RankHeartbeats(const RankHeartbeats&) = delete;
  RankHeartbeats& operator=(const RankHeartbeats&) = delete;

  // A sentence for the failure message: "lost rank(s): 1 of 2 (no heartbeat ...)", "the
  // rendezvous store at H:P (hosted by rank 0) is unreachable: rank 0 is lost (...)", or
  // "every other rank still beats (...)". Returns within 2.5 x `every` + 2 x `store_deadline`.
  std::string DiagnoseLoss();

  static std::string Key(int rank);

  struct Shared;  // the store and the stop flag, shared with the (detached) threads

 private:
  std::shared_ptr<Shared> shared_;
  const int rank_;
  const int world_size_;
  const std::string where_;
  const absl::Duration every_;
  const absl::Duration store_deadline_;
};

// `comm` whose failed collectives name the lost rank(s): the status of the first failure gets
// "; " + heartbeats->DiagnoseLoss() appended (same code).
std::unique_ptr<Communicator> WithLossDiagnosis(std::unique_ptr<Communicator> comm,
                                                std::unique_ptr<RankHeartbeats> heartbeats);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_RANK_HEARTBEATS_H_
