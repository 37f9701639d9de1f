#include "trainer/device_tier_group.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "trainer/host_register.h"

namespace graphshard::trainer {

absl::StatusOr<DeviceTierGroup> FindDeviceTierGroup(client::Communicator& comm,
                                                    const std::vector<std::string>& rank_hosts,
                                                    int device_index) {
  if (std::ssize(rank_hosts) != comm.world_size()) {
    return absl::InternalError(absl::StrCat("shared device tier: ", rank_hosts.size(),
                                            " host ids for ", comm.world_size(), " ranks"));
  }
  DeviceTierGroup g;
  const std::string& mine = rank_hosts[static_cast<size_t>(comm.rank())];
  for (int r = 0; r < comm.world_size(); ++r) {
    if (rank_hosts[static_cast<size_t>(r)] != mine) continue;
    if (r == comm.rank()) g.index = std::ssize(g.ranks);
    g.ranks.push_back(r);
  }
  const std::string bus = DeviceBusId(device_index);
  ASSIGN_OR_RETURN(const std::vector<std::string> buses, client::AllGatherStrings(comm, bus));
  if (bus.empty()) g.why_not = "this trainer's GPU has no PCI bus id (no CUDA in this build?)";
  for (const int r : g.ranks) {
    if (!g.why_not.empty()) break;
    const std::string& other = buses[static_cast<size_t>(r)];
    if (other.empty()) {
      g.why_not = absl::StrCat("rank ", r, "'s GPU has no PCI bus id");
    } else if (!CanReadPeer(device_index, other, &g.why_not) && g.why_not.empty()) {
      g.why_not = absl::StrCat("no peer access to rank ", r, "'s GPU ", other);
    }
  }
  int64_t ok[1] = {g.why_not.empty() ? 1 : 0};
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(ok), client::ReduceOp::kSum));
  g.ok = ok[0] == comm.world_size();
  return g;
}

}  // namespace graphshard::trainer
