#ifndef GRAPHSHARD_CLIENT_DEVICE_SHARE_H_
#define GRAPHSHARD_CLIENT_DEVICE_SHARE_H_

// The shared device tier (--device-tier shared, trainer/feature_store.h): what each rank of a
// host publishes for its share of a node type's rows (AllGatherStrings), and the one outcome
// every rank takes from all of them, so that the ranks stop, or fall back, alike. No Torch.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "client/rendezvous.h"

namespace graphshard::client {

// A loaded share: its memory handle (CUDA IPC, opaque bytes). A failed one: the failure's code,
// so that the other ranks know whether it was a share that did not fit.
std::string PublishedShare(const std::string& handle);
std::string PublishedShareFailure(const absl::Status& failure);

// The handle in a string PublishedShare made ("" for a failure or a malformed string).
std::string SharedHandle(absl::string_view published);

// OK where every rank published a handle. Otherwise, naming the first failed rank and `type`:
// ResourceExhausted where any rank's share did not fit its GPU (ResourceExhausted: with
// --device-tier / --feature-store auto every rank falls back alike), else FailedPrecondition.
// `own` is this rank's own failure (OK where it loaded), returned as it is where it failed.
absl::Status SharesLoaded(const std::vector<std::string>& published, absl::string_view type,
                          const absl::Status& own);

// How the shares travel (GRAPHSHARD_SHARED_TIER_EXPORT, read by the trainer where it makes its
// share): unset, "" or "vmm" -> CUDA's virtual memory API, the memory passed as a file
// descriptor over a Unix socket (true; trainer/vmm_share.h); "ipc" -> CUDA IPC handles
// (false: at papers scale 1 a share mapped so read at ~27 GB/s against ~347 GB/s;
// tests/bench/RESULTS.md, "VMM shares"); anything else: InvalidArgument naming the variable
// and the value.
absl::StatusOr<bool> WantVmmShares(const EnvLookup& env);

// A VMM share's handle: where its file descriptor is offered (an abstract Unix socket's name),
// by which process, and the mapping's size. Formatted "vmm:<socket>:<pid>:<size>"; the parse
// gives nullopt for anything else (a CUDA IPC handle included: 64 bytes, never a valid text of
// this form, which is longer).
struct VmmShareHandle {
  std::string socket;
  int64_t pid = 0;
  uint64_t size = 0;
};
std::string FormatVmmShareHandle(const VmmShareHandle& h);
absl::optional<VmmShareHandle> ParseVmmShareHandle(absl::string_view handle);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_DEVICE_SHARE_H_
