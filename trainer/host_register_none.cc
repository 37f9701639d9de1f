#include "trainer/host_register.h"

namespace graphshard::trainer {

// No CUDA toolkit at build time: nothing is registered (the trainer runs on the CPU anyway).
shm::ShmRingReader::MapHooks CudaHostRegisterHooks() { return {}; }

}  // namespace graphshard::trainer
