#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trainer/host_register.h"
#include "trainer/vmm_share.h"

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

namespace graphshard::trainer {
namespace {

// Runs `f` with `device` current, restoring the caller's device.
template <typename F>
auto OnDevice(int device, F f) {
  int was = 0;
  cudaGetDevice(&was);
  cudaSetDevice(device);
  auto result = f();
  cudaSetDevice(was);
  return result;
}

std::string Failed(const char* what, cudaError_t err) {
  cudaGetLastError();
  return std::string(what) + ": " + cudaGetErrorString(err);
}

}  // namespace

void* AllocateShareable(int device, size_t bytes, std::string* handle, std::string* error) {
  const bool vmm_wanted = vmm::Wanted(error);
  if (!error->empty()) return nullptr;
  if (vmm_wanted) {
    void* ptr =
        OnDevice(device, [&]() -> void* { return vmm::Allocate(device, bytes, handle, error); });
    if (ptr == nullptr) {
      *error += "; GRAPHSHARD_SHARED_TIER_EXPORT=ipc on every trainer shares through CUDA IPC";
    }
    return ptr;
  }
  return OnDevice(device, [&]() -> void* {
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, bytes);
    if (err != cudaSuccess) {
      *error = Failed("cudaMalloc", err);
      return nullptr;
    }
    cudaIpcMemHandle_t h;
    err = cudaIpcGetMemHandle(&h, ptr);
    if (err != cudaSuccess) {
      *error = Failed("cudaIpcGetMemHandle", err);
      cudaFree(ptr);
      return nullptr;
    }
    handle->assign(reinterpret_cast<const char*>(&h), sizeof(h));
    return ptr;
  });
}

void FreeShareable(void* ptr) {
  if (ptr == nullptr || vmm::Free(ptr)) return;
  if (cudaFree(ptr) != cudaSuccess) cudaGetLastError();
}

bool StartServingShare(void* own, const std::vector<std::string>& peer_handles,
                       std::string* error) {
  std::string not_vmm;
  if (!vmm::Wanted(&not_vmm)) return true;  // IPC handles need no serving
  return vmm::StartServing(own, peer_handles, error);
}

bool FinishServingShare(void* own, std::string* error) { return vmm::FinishServing(own, error); }

std::string DeviceBusId(int device) {
  char id[32] = {0};
  if (cudaDeviceGetPCIBusId(id, sizeof(id), device) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return id;
}

bool CanReadPeer(int device, const std::string& peer_bus_id, std::string* why) {
  int peer = -1;
  cudaError_t err = cudaDeviceGetByPCIBusId(&peer, peer_bus_id.c_str());
  if (err != cudaSuccess) {
    *why = Failed(("GPU " + peer_bus_id + " is not visible here: cudaDeviceGetByPCIBusId").c_str(),
                  err);
    return false;
  }
  if (peer == device) return true;
  int can = 0;
  err = cudaDeviceCanAccessPeer(&can, device, peer);
  if (err != cudaSuccess || can == 0) {
    *why = err != cudaSuccess
               ? Failed("cudaDeviceCanAccessPeer", err)
               : "GPU " + DeviceBusId(device) + " has no peer access to GPU " + peer_bus_id;
    return false;
  }
  return true;
}

void* OpenPeer(int device, const std::string& handle, std::string* error) {
  if (vmm::IsHandle(handle)) {
    return OnDevice(device, [&]() -> void* { return vmm::Open(device, handle, error); });
  }
  if (handle.size() != sizeof(cudaIpcMemHandle_t)) {
    *error = "a peer's memory handle has " + std::to_string(handle.size()) + " bytes, not " +
             std::to_string(sizeof(cudaIpcMemHandle_t));
    return nullptr;
  }
  return OnDevice(device, [&]() -> void* {
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle.data(), sizeof(h));
    void* ptr = nullptr;
    const cudaError_t err = cudaIpcOpenMemHandle(&ptr, h, cudaIpcMemLazyEnablePeerAccess);
    if (err != cudaSuccess) {
      *error = Failed("cudaIpcOpenMemHandle", err);
      return nullptr;
    }
    return ptr;
  });
}

void ClosePeer(void* ptr) {
  if (ptr == nullptr || vmm::Close(ptr)) return;
  if (cudaIpcCloseMemHandle(ptr) != cudaSuccess) cudaGetLastError();
}

}  // namespace graphshard::trainer
