#ifndef GRAPHSHARD_TRAINER_DEVICE_TIER_GROUP_H_
#define GRAPHSHARD_TRAINER_DEVICE_TIER_GROUP_H_

// --device-tier shared (feature_store.h): which trainers of a host hold one device tier
// together, and whether their GPUs reach each other. No Torch here (train.cc decides with it).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/communicator.h"

namespace graphshard::trainer {

// The trainers of one host that hold a shared device tier together (--device-tier shared):
// every rank's GPU bus id gathered, each rank's host group (the ranks with its host id, in rank
// order), and whether every GPU reaches its group's others in place (peer access), agreed by
// all ranks. A collective: every rank calls FindDeviceTierGroup at the same point.
struct DeviceTierGroup {
  std::vector<int> ranks;  // this host's ranks, ascending
  int index = 0;           // this rank's position in `ranks`: it holds share `index`
  bool ok = false;         // every rank of every host can read its group's GPUs
  std::string why_not;     // this rank's reason when it cannot ("" when it can)
};
absl::StatusOr<DeviceTierGroup> FindDeviceTierGroup(client::Communicator& comm,
                                                    const std::vector<std::string>& rank_hosts,
                                                    int device_index);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_DEVICE_TIER_GROUP_H_
