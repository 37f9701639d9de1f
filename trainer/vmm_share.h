#ifndef GRAPHSHARD_TRAINER_VMM_SHARE_H_
#define GRAPHSHARD_TRAINER_VMM_SHARE_H_

// The shared device tier's shares made with CUDA's virtual memory API (cuMemCreate) and passed
// to the host's other trainers as file descriptors over a Unix socket (common/fd_passing.h),
// as NCCL passes its own peer buffers: the default (GRAPHSHARD_SHARED_TIER_EXPORT unset or
// "vmm"; "ipc" selects CUDA IPC handles instead: host_register.h; trainer/README.md). The driver's
// functions are looked up at run time (cudaGetDriverEntryPointByVersion): the trainer does not
// link libcuda, so it still starts where there is no GPU driver. Built with the CUDA toolkit.

#include <cstddef>
#include <string>
#include <vector>

namespace graphshard::trainer::vmm {

// GRAPHSHARD_SHARED_TIER_EXPORT: unset, "" or "vmm" -> true; "ipc" -> false; anything else:
// false with *error naming the variable and its value.
bool Wanted(std::string* error);

// `bytes` (rounded up to the driver's granularity) on GPU `device`, readable and writable by
// it, and the handle the peers open it by: "vmm:<socket name>:<pid>:<size>". nullptr with
// *error.
void* Allocate(int device, size_t bytes, std::string* handle, std::string* error);
// Whether `handle` is one of Allocate's.
bool IsHandle(const std::string& handle);
// Starts handing this process's share `own` to the processes whose handles are
// `peer_handles` (each must be a VMM handle: the host's trainers must agree on the variable),
// in the background; FinishServing waits for it (at most a minute) and closes the offer.
bool StartServing(void* own, const std::vector<std::string>& peer_handles, std::string* error);
bool FinishServing(void* own, std::string* error);
// A peer's share mapped here for GPU `device`; nullptr with *error.
void* Open(int device, const std::string& handle, std::string* error);
// Undo Allocate / Open; false when `ptr` is not one of theirs (then nothing is done).
bool Free(void* ptr);
bool Close(void* ptr);

}  // namespace graphshard::trainer::vmm

#endif  // GRAPHSHARD_TRAINER_VMM_SHARE_H_
