#include "trainer/host_register.h"

namespace graphshard::trainer {

// No CUDA toolkit at build time: nothing is registered (the trainer runs on the CPU anyway).
shm::ShmRingReader::MapHooks CudaHostRegisterHooks() { return {}; }

void* RegisterHostForDevice(void* /*base*/, size_t /*length*/, std::string* error) {
  *error = "this build has no CUDA toolkit";
  return nullptr;
}

void UnregisterHost(void* /*base*/) {}

}  // namespace graphshard::trainer
