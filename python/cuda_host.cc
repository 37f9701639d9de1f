#include "python/cuda_host.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graphshard::python {
namespace {

// The CUDA runtime API's C signatures (cuda_runtime_api.h), as plain function pointers.
using HostRegisterFn = int (*)(void* ptr, size_t size, unsigned int flags);
using HostUnregisterFn = int (*)(void* ptr);
using GetLastErrorFn = int (*)();

struct CudaRuntime {
  HostRegisterFn host_register = nullptr;
  HostUnregisterFn host_unregister = nullptr;
  GetLastErrorFn get_last_error = nullptr;
};

int FindCudart(struct dl_phdr_info* info, size_t /*size*/, void* data) {
  if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "libcudart.so") != nullptr) {
    *static_cast<std::string*>(data) = info->dlpi_name;
    return 1;
  }
  return 0;
}

}  // namespace

absl::StatusOr<shm::ShmRingReader::MapHooks> LoadedCudaHostRegisterHooks() {
  std::string path;
  dl_iterate_phdr(&FindCudart, &path);
  if (path.empty()) {
    return absl::NotFoundError("no CUDA runtime (libcudart) is loaded in this process");
  }
  // RTLD_NOLOAD: a handle to the library already loaded, never a second copy.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return absl::NotFoundError(absl::StrCat("dlopen ", path, ": ", dlerror()));
  CudaRuntime rt;
  rt.host_register = reinterpret_cast<HostRegisterFn>(dlsym(lib, "cudaHostRegister"));
  rt.host_unregister = reinterpret_cast<HostUnregisterFn>(dlsym(lib, "cudaHostUnregister"));
  rt.get_last_error = reinterpret_cast<GetLastErrorFn>(dlsym(lib, "cudaGetLastError"));
  if (rt.host_register == nullptr || rt.host_unregister == nullptr ||
      rt.get_last_error == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, " lacks cudaHostRegister"));
  }
  // The library stays loaded (the handle is never closed): the hooks outlive this call.
  shm::ShmRingReader::MapHooks hooks;
  hooks.on_map = [rt](void* base, size_t length) {
    const int err = rt.host_register(base, length, /*cudaHostRegisterDefault=*/0);
    if (err == 0) return true;
    rt.get_last_error();  // clear it: this segment's batches are copied from pageable memory
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      std::fprintf(stderr,
                   "graphshard: cudaHostRegister of a %zu-byte ring segment failed (error %d); "
                   "those batches are copied from pageable memory\n",
                   length, err);
    }
    return false;
  };
  hooks.on_unmap = [rt](void* base) {
    if (rt.host_unregister(base) != 0) rt.get_last_error();
  };
  return hooks;
}

}  // namespace graphshard::python
