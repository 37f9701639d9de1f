#ifndef GRAPHSHARD_TRAINER_TIERED_GATHER_H_
#define GRAPHSHARD_TRAINER_TIERED_GATHER_H_

// The tiered feature store's gather on a GPU (feature_store.h) as one CUDA kernel: for each
// requested id, its row from the device tier or, read in place over PCIe, from the host tier
// (registered host memory, host_register.h), as the id's code in the store's map says; rows of
// the remote tier are left for the caller. One pass, no host synchronisation: torch's
// index_select path needs the positions of each tier's rows on the host first (nonzero), which
// waits for the device once per tier and batch. Built from tiered_gather.cu where CMake finds
// a CUDA compiler, else tiered_gather_none.cc (then the store uses the torch path).
// No Torch and no CUDA headers here.

#include <cstdint>
#include <string>

namespace graphshard::trainer {

// Batches gathered before on the same stream whose rows are still on the device (the input
// pipeline holds them until their steps are done; feature_store.cc keeps a ring of them): a
// host row (and, with `found`, a remote row) one of them holds is copied from there instead of
// read over PCIe or fetched. Where each such row was last gathered is kept in `last`
// (slot << 24 | position; -1: never), checked against the slot's ids before it is used, so a
// stale entry only costs the read or the fetch.
constexpr int kMaxReusedBatches = 8;
struct ReusedBatches {
  int32_t* last = nullptr;  // [rows of the type], on the device, updated; nullptr: no reuse
  int slot = 0;             // this batch's slot (its own entry below is empty)
  const int64_t* ids[kMaxReusedBatches] = {};  // each slot's batch's ids, nullptr: empty
  const void* rows[kMaxReusedBatches] = {};    // its gathered rows [n, row_bytes]
  int64_t n[kMaxReusedBatches] = {};
  unsigned long long* reused = nullptr;  // on the device: host rows so copied are added to it
  // [n] on the device, or nullptr: remote rows are looked up too; a remote row found is copied
  // and its byte set to 1 (the caller fetches the others and must fill them in before the
  // next gather on the stream, or take this batch out of the ring).
  uint8_t* found = nullptr;
};

struct TieredGatherArgs {
  const int64_t* ids = nullptr;  // [n], on the device
  int64_t n = 0;
  const int32_t* code = nullptr;      // the store's map (feature_store.cc: >= 0 device slot,
                                      // -1 remote, <= -2 host row -2 - code), on the device
  const void* device_rows = nullptr;  // the device tier, [slots, row_bytes]
  const void* host_rows = nullptr;    // the host tier as the device addresses it
  void* out = nullptr;                // [n, row_bytes], on the device
  int64_t row_bytes = 0;              // even
  ReusedBatches reuse;
};

// Queues the gather on CUDA stream `stream` (a cudaStream_t). False, with the reason, when this
// build has no kernel or the launch fails.
bool LaunchTieredGather(const TieredGatherArgs& args, void* stream, std::string* error);

// The shared device tier (feature_store.h, --device-tier shared): the table split by id over
// the host's G GPUs, GPU j holding rows [j * share_rows, (j + 1) * share_rows); row `id` read
// from shares[id / share_rows] (this GPU's memory or a peer's, over peer access).
struct ShardedGatherArgs {
  const int64_t* ids = nullptr;  // [n], on the device
  int64_t n = 0;
  const uint64_t* shares = nullptr;  // [G] share addresses as this GPU reads them, on the device
  int64_t share_rows = 0;            // > 0
  void* out = nullptr;               // [n, row_bytes], on the device
  int64_t row_bytes = 0;             // even
};
bool LaunchShardedGather(const ShardedGatherArgs& args, void* stream, std::string* error);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_TIERED_GATHER_H_
