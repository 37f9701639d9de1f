#ifndef GRAPHSHARD_PYTHON_CUDA_HOST_H_
#define GRAPHSHARD_PYTHON_CUDA_HOST_H_

// Ring-segment hooks (shm::ShmRingReader::MapHooks) that page-lock every segment with the CUDA
// runtime already loaded in this process (PyTorch's libcudart, found with dl_iterate_phdr), so
// that the GPU copies batches by DMA straight out of the shared memory, as graphshard-trainer
// --h2d registered does (trainer/host_register.h). Found at run time, so the module builds
// without a CUDA toolkit and against any PyTorch. Thread-safe.

#include "absl/status/statusor.h"
#include "shm/ring.h"

namespace graphshard::python {

// NotFound when no libcudart is loaded (a CPU-only PyTorch, or CUDA not initialised yet).
absl::StatusOr<shm::ShmRingReader::MapHooks> LoadedCudaHostRegisterHooks();

}  // namespace graphshard::python

#endif  // GRAPHSHARD_PYTHON_CUDA_HOST_H_
