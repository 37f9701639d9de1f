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

#include "shm/ring.h"

namespace graphshard::trainer {

shm::ShmRingReader::MapHooks CudaHostRegisterHooks();

// The tiered feature store's host tier (feature_store.h): registers [base, base + length) with
// CUDA as mapped page-locked memory and returns the address at which a GPU kernel reads it in
// place over PCIe (zero-copy), or nullptr where this build has no CUDA or the registration
// fails (then *error says why). Undo with UnregisterHost(base) before freeing the memory.
void* RegisterHostForDevice(void* base, size_t length, std::string* error);
void UnregisterHost(void* base);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_HOST_REGISTER_H_
