#ifndef GRAPHSHARD_TRAINER_HOST_REGISTER_H_
#define GRAPHSHARD_TRAINER_HOST_REGISTER_H_

// --h2d registered: hooks for a ring reader (shm::ShmRingReader::SetMapHooks) that register
// every ring segment it maps with CUDA (cudaHostRegister: page-locked, so the GPU copies a batch
// by DMA straight out of the shared memory, no staging copy on the CPU) and unregister it before
// it is unmapped. Segments stay mapped across a client's streams, so each is registered once
// per run, not per batch. Built with the CUDA toolkit (host_register_cuda.cc); without it, or
// when a registration fails, segments stay unregistered and batches go through the staging copy.
// No Torch here.

#include "shm/ring.h"

namespace graphshard::trainer {

shm::ShmRingReader::MapHooks CudaHostRegisterHooks();

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_HOST_REGISTER_H_
