#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "trainer/host_register.h"

namespace graphshard::trainer {

shm::ShmRingReader::MapHooks CudaHostRegisterHooks() {
  shm::ShmRingReader::MapHooks hooks;
  hooks.on_map = [](void* base, size_t length) {
    const cudaError_t err = cudaHostRegister(base, length, cudaHostRegisterDefault);
    if (err == cudaSuccess) return true;
    cudaGetLastError();  // clear it: the staging copy takes over for this segment
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      std::fprintf(stderr,
                   "graphshard-trainer: cudaHostRegister of a %zu-byte ring segment failed "
                   "(%s); those batches use the staging copy\n",
                   length, cudaGetErrorString(err));
    }
    return false;
  };
  hooks.on_unmap = [](void* base) {
    if (cudaHostUnregister(base) != cudaSuccess) cudaGetLastError();
  };
  return hooks;
}

void* RegisterHostForDevice(void* base, size_t length, std::string* error) {
  cudaError_t err = cudaHostRegister(base, length, cudaHostRegisterMapped);
  if (err != cudaSuccess) {
    cudaGetLastError();
    *error = std::string("cudaHostRegister: ") + cudaGetErrorString(err);
    return nullptr;
  }
  void* device = nullptr;
  err = cudaHostGetDevicePointer(&device, base, 0);
  if (err != cudaSuccess) {
    cudaGetLastError();
    cudaHostUnregister(base);
    *error = std::string("cudaHostGetDevicePointer: ") + cudaGetErrorString(err);
    return nullptr;
  }
  return device;
}

void UnregisterHost(void* base) {
  if (cudaHostUnregister(base) != cudaSuccess) cudaGetLastError();
}

}  // namespace graphshard::trainer
