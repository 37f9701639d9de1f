#ifndef GRAPHSHARD_TRAINER_HOST_REGISTER_H_
#define GRAPHSHARD_TRAINER_HOST_REGISTER_H_

// --h2d registered: hooks for a ring reader (shm::ShmRingReader::SetMapHooks) that register
// every ring segment it maps with CUDA (cudaHostRegister: page-locked, so the GPU copies a batch
// by DMA straight out of the shared memory, no staging copy on the CPU) and unregister it before
// it is unmapped. Segments stay mapped across a client's streams, so each is registered once
// per run, not per batch. Built with the CUDA toolkit (host_register_cuda.cc); without it, or
// when a registration fails, segments stay unregistered and batches go through the staging copy.
// No Torch here.

#include <cstddef>
#include <string>
#include <vector>

#include "shm/ring.h"

namespace graphshard::trainer {

shm::ShmRingReader::MapHooks CudaHostRegisterHooks();

// The tiered feature store's host tier (feature_store.h): registers [base, base + length) with
// CUDA as mapped page-locked memory and returns the address at which a GPU kernel reads it in
// place over PCIe (zero-copy), or nullptr where this build has no CUDA or the registration
// fails (then *error says why). Undo with UnregisterHost(base) before freeing the memory.
void* RegisterHostForDevice(void* base, size_t length, std::string* error);
void UnregisterHost(void* base);

// The shared device tier (feature_store.h, --device-tier): GPU memory that the other trainer
// processes of the host read in place over peer access (NVLink or PCIe), made with CUDA's
// virtual memory API (the default, below) or through CUDA IPC (GRAPHSHARD_SHARED_TIER_EXPORT=ipc).
// AllocateShareable: `bytes` on GPU `device` (cuMemCreate, or with
// GRAPHSHARD_SHARED_TIER_EXPORT=ipc its own cudaMalloc: an IPC handle names a whole allocation)
// and its handle as bytes for the peers; nullptr with *error.
void* AllocateShareable(int device, size_t bytes, std::string* handle, std::string* error);
void FreeShareable(void* ptr);
// The PCI bus id of GPU `device` ("0000:1b:00.0"), or "" (no CUDA).
std::string DeviceBusId(int device);
// Whether GPU `device` can read the memory of the GPU at `peer_bus_id` in place (the same GPU:
// yes); *why when not.
bool CanReadPeer(int device, const std::string& peer_bus_id, std::string* why);
// Maps a peer's AllocateShareable handle into this process for GPU `device` (peer access
// enabled as needed): the address its kernels read it at; nullptr with *error. Undo with
// ClosePeer before the peer frees it.
void* OpenPeer(int device, const std::string& handle, std::string* error);
void ClosePeer(void* ptr);
// By default (GRAPHSHARD_SHARED_TIER_EXPORT unset or vmm) the shares are made with CUDA's
// virtual memory API and handed to the peers as file descriptors (vmm_share.h): between
// publishing the handles and opening the peers' shares, StartServingShare starts handing this
// rank's `own` share to the ranks whose handles are `peer_handles`, and FinishServingShare
// (after the peers' shares are open) waits until each had it (at most a minute). No-ops for
// CUDA IPC handles.
bool StartServingShare(void* own, const std::vector<std::string>& peer_handles, std::string* error);
bool FinishServingShare(void* own, std::string* error);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_HOST_REGISTER_H_
