#ifndef GRAPHSHARD_CLIENT_FEATURE_TIERS_H_
#define GRAPHSHARD_CLIENT_FEATURE_TIERS_H_

// The tiered feature store's counters (trainer/feature_store.h), reported per epoch and in the
// summary (report.h). No Torch.

#include <cstdint>
#include <string>

namespace graphshard::client {

// Where the rows of training batches came from with the tiered feature store
// (trainer/feature_store.h): rows gathered from each tier, bytes copied to the GPU (host and
// remote rows; 0 on a CPU trainer) and bytes fetched from servers (remote rows). Summed over
// the steps counted (an epoch's, a rank's or all of them). All zero without the store.
struct FeatureTierCounts {
  double device_rows = 0;  // the device cache (the GPU tier)
  double peer_rows = 0;    // other GPUs of the host (the shared device tier), over peer access
  double host_rows = 0;    // host memory (the rows of this host's parts)
  // Of host_rows and remote_rows, those copied from batches already on the GPU instead of read
  // over PCIe or fetched over the network.
  double reused_rows = 0;
  double remote_rows = 0;  // fetched by id from the servers that own them
  double pcie_bytes = 0;
  double network_bytes = 0;
  double peer_bytes = 0;  // read from other GPUs (peer_rows' bytes)
  double rows() const { return device_rows + peer_rows + host_rows + remote_rows; }
  FeatureTierCounts& operator+=(const FeatureTierCounts& o) {
    device_rows += o.device_rows;
    peer_rows += o.peer_rows;
    peer_bytes += o.peer_bytes;
    host_rows += o.host_rows;
    reused_rows += o.reused_rows;
    remote_rows += o.remote_rows;
    pcie_bytes += o.pcie_bytes;
    network_bytes += o.network_bytes;
    return *this;
  }
};

// What a tiered store holds (trainer/feature_store.h), for the trainer's log.
struct FeatureStoreLayout {
  int64_t device_bytes = 0;                                 // rows in the device tier
  int64_t host_bytes = 0;                                   // rows in the host tier
  int64_t device_rows = 0, host_rows = 0, remote_rows = 0;  // rows of the graph in each tier
  int64_t host_cached_rows = 0;  // of host_rows, other hosts' rows (the host cache)
  // The shared device tier (--device-tier): GPUs holding the table together (0: not shared);
  // device_rows / device_bytes are then this GPU's share.
  int shared_by_gpus = 0;
  bool host_zero_copy = false;  // the GPU reads the host tier in place
  std::string host_note;        // why not, where it could have
  // The share of the pre-sampling pass's visits that the device tier holds (its expected hit
  // rate); 1 when every row is there.
  double expected_device_hit_rate = 1;
  double presampled_visits = 0, presampled_hits = 0;  // its parts
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_FEATURE_TIERS_H_
