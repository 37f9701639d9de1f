#include "trainer/host_register.h"

namespace graphshard::trainer {

// No CUDA toolkit at build time: nothing is registered (the trainer runs on the CPU anyway).
shm::ShmRingReader::MapHooks CudaHostRegisterHooks() { return {}; }

void* RegisterHostForDevice(void* /*base*/, size_t /*length*/, std::string* error) {
  *error = "this build has no CUDA toolkit";
  return nullptr;
}

void UnregisterHost(void* /*base*/) {}

void* AllocateShareable(int /*device*/, size_t /*bytes*/, std::string* /*handle*/,
                        std::string* error) {
  *error = "this build has no CUDA toolkit";
  return nullptr;
}
void FreeShareable(void* /*ptr*/) {}
std::string DeviceBusId(int /*device*/) { return ""; }
bool CanReadPeer(int /*device*/, const std::string& /*peer_bus_id*/, std::string* why) {
  *why = "this build has no CUDA toolkit";
  return false;
}
void* OpenPeer(int /*device*/, const std::string& /*handle*/, std::string* error) {
  *error = "this build has no CUDA toolkit";
  return nullptr;
}
void ClosePeer(void* /*ptr*/) {}
bool StartServingShare(void* /*own*/, const std::vector<std::string>& /*peer_handles*/,
                       std::string* /*error*/) {
  return true;
}
bool FinishServingShare(void* /*own*/, std::string* /*error*/) { return true; }

}  // namespace graphshard::trainer
