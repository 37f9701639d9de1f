#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/device_share.h"
#include "client/rendezvous.h"
#include "common/fd_passing.h"
#include "trainer/vmm_share.h"

namespace graphshard::trainer::vmm {
namespace {

// How long a rank hands its share out, and waits for a peer's.
constexpr double kPassTimeoutS = 60;

// The driver's virtual memory functions, looked up once at run time.
struct Driver {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemExportToShareableHandle) export_handle = nullptr;
  decltype(&cuMemImportFromShareableHandle) import_handle = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  std::string error;  // why not, when a function is missing
};

template <typename F>
void Find(const char* name, F* f, std::string* error) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || p == nullptr) {
    cudaGetLastError();
    if (error->empty()) *error = absl::StrCat("the CUDA driver has no ", name);
    return;
  }
  *f = reinterpret_cast<F>(p);
}

const Driver& TheDriver() {
  static const Driver driver = [] {
    Driver d;
    Find("cuMemGetAllocationGranularity", &d.granularity, &d.error);
    Find("cuMemCreate", &d.create, &d.error);
    Find("cuMemAddressReserve", &d.reserve, &d.error);
    Find("cuMemMap", &d.map, &d.error);
    Find("cuMemSetAccess", &d.set_access, &d.error);
    Find("cuMemExportToShareableHandle", &d.export_handle, &d.error);
    Find("cuMemImportFromShareableHandle", &d.import_handle, &d.error);
    Find("cuMemUnmap", &d.unmap, &d.error);
    Find("cuMemAddressFree", &d.address_free, &d.error);
    Find("cuMemRelease", &d.release, &d.error);
    return d;
  }();
  return driver;
}

std::string Failed(const char* what, CUresult r) {
  return absl::StrCat(what, " failed (CUresult ", r, ")");
}

// This process's share: its allocation, mapping, exported descriptor and the offer of it.
struct Own {
  CUmemGenericAllocationHandle handle = 0;
  size_t size = 0;
  int fd = -1;
  common::FdOffer offer;
  std::thread server;
  std::string served_error;  // written by `server`, read after joining it
};

// This process's shares and the peers' shares it mapped, by address.
struct Registry {
  absl::Mutex mu;
  std::map<void*, std::unique_ptr<Own>> owned ABSL_GUARDED_BY(mu);
  std::map<void*, size_t> mapped ABSL_GUARDED_BY(mu);  // size of each mapping
};
Registry& Shares() {
  static auto* r = new Registry();
  return *r;
}

// Maps `handle` (size bytes) at a fresh address readable and writable by GPU `device`; 0 with
// *error (the reservation released).
CUdeviceptr MapFor(int device, CUmemGenericAllocationHandle handle, size_t size,
                   std::string* error) {
  const Driver& d = TheDriver();
  CUdeviceptr va = 0;
  CUresult r = d.reserve(&va, size, 0, 0, 0);
  if (r != CUDA_SUCCESS) {
    *error = Failed("cuMemAddressReserve", r);
    return 0;
  }
  r = d.map(va, size, 0, handle, 0);
  if (r != CUDA_SUCCESS) {
    d.address_free(va, size);
    *error = Failed("cuMemMap", r);
    return 0;
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = d.set_access(va, size, &access, 1);
  if (r != CUDA_SUCCESS) {
    d.unmap(va, size);
    d.address_free(va, size);
    *error = Failed("cuMemSetAccess", r);
    return 0;
  }
  return va;
}

}  // namespace

bool Wanted(std::string* error) {
  const absl::StatusOr<bool> want = client::WantVmmShares(client::ProcessEnv());
  if (!want.ok()) *error = std::string(want.status().message());
  return want.ok() && *want;
}

bool IsHandle(const std::string& handle) { return client::ParseVmmShareHandle(handle).has_value(); }

void* Allocate(int device, size_t bytes, std::string* handle, std::string* error) {
  const Driver& d = TheDriver();
  if (!d.error.empty()) {
    *error = d.error;
    return nullptr;
  }
  auto own = std::make_unique<Own>();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t granularity = 0;
  CUresult r = d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  if (r != CUDA_SUCCESS || granularity == 0) {
    *error = Failed("cuMemGetAllocationGranularity", r);
    return nullptr;
  }
  own->size = (std::max<size_t>(bytes, 1) + granularity - 1) / granularity * granularity;
  r = d.create(&own->handle, own->size, &prop, 0);
  if (r != CUDA_SUCCESS) {
    *error = Failed("cuMemCreate", r);
    return nullptr;
  }
  const CUdeviceptr va = MapFor(device, own->handle, own->size, error);
  if (va == 0) {
    d.release(own->handle);
    return nullptr;
  }
  void* ptr = reinterpret_cast<void*>(va);
  r = d.export_handle(&own->fd, own->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  absl::StatusOr<common::FdOffer> offer = absl::InternalError("not exported");
  if (r == CUDA_SUCCESS) offer = common::FdOffer::Listen();
  if (!offer.ok()) {
    *error = r != CUDA_SUCCESS ? Failed("cuMemExportToShareableHandle", r)
                               : std::string(offer.status().message());
    if (own->fd >= 0) ::close(own->fd);
    d.unmap(va, own->size);
    d.address_free(va, own->size);
    d.release(own->handle);
    return nullptr;
  }
  own->offer = *std::move(offer);
  *handle = client::FormatVmmShareHandle(
      {.socket = own->offer.name(), .pid = ::getpid(), .size = own->size});
  Registry& reg = Shares();
  absl::MutexLock lock(&reg.mu);
  reg.owned[ptr] = std::move(own);
  return ptr;
}

bool StartServing(void* own, const std::vector<std::string>& peer_handles, std::string* error) {
  Registry& reg = Shares();
  absl::MutexLock lock(&reg.mu);
  const auto it = reg.owned.find(own);
  if (it == reg.owned.end()) {
    *error = "not a share of this process";
    return false;
  }
  std::vector<pid_t> pids;
  for (const std::string& h : peer_handles) {
    const absl::optional<client::VmmShareHandle> p = client::ParseVmmShareHandle(h);
    if (!p.has_value()) {
      *error =
          "another trainer of this host shares its rows through CUDA IPC, this one through "
          "the VMM API: set GRAPHSHARD_SHARED_TIER_EXPORT alike for all";
      return false;
    }
    pids.push_back(static_cast<pid_t>(p->pid));
  }
  Own* o = it->second.get();
  o->server = std::thread([o, pids] {
    const absl::Status s = o->offer.Serve(o->fd, pids, kPassTimeoutS);
    if (!s.ok()) o->served_error = std::string(s.message());
  });
  return true;
}

bool FinishServing(void* own, std::string* error) {
  Own* o = nullptr;
  {
    Registry& reg = Shares();
    absl::MutexLock lock(&reg.mu);
    const auto it = reg.owned.find(own);
    if (it == reg.owned.end()) return true;
    o = it->second.get();
  }
  if (o->server.joinable()) o->server.join();
  o->offer = common::FdOffer();
  if (o->fd >= 0) ::close(o->fd);
  o->fd = -1;
  if (!o->served_error.empty()) {
    *error = o->served_error;
    return false;
  }
  return true;
}

void* Open(int device, const std::string& handle, std::string* error) {
  const Driver& d = TheDriver();
  const absl::optional<client::VmmShareHandle> p = client::ParseVmmShareHandle(handle);
  if (!d.error.empty() || !p.has_value()) {
    *error = d.error.empty() ? "a malformed share handle" : d.error;
    return nullptr;
  }
  absl::StatusOr<int> fd = common::FetchFd(p->socket, static_cast<pid_t>(p->pid), kPassTimeoutS);
  if (!fd.ok()) {
    *error = std::string(fd.status().message());
    return nullptr;
  }
  CUmemGenericAllocationHandle h = 0;
  const CUresult r = d.import_handle(&h, reinterpret_cast<void*>(static_cast<uintptr_t>(*fd)),
                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  ::close(*fd);
  if (r != CUDA_SUCCESS) {
    *error = Failed("cuMemImportFromShareableHandle", r);
    return nullptr;
  }
  const CUdeviceptr va = MapFor(device, h, p->size, error);
  d.release(h);  // the mapping keeps the memory
  if (va == 0) return nullptr;
  void* ptr = reinterpret_cast<void*>(va);
  Registry& reg = Shares();
  absl::MutexLock lock(&reg.mu);
  reg.mapped[ptr] = p->size;
  return ptr;
}

bool Free(void* ptr) {
  std::unique_ptr<Own> o;
  {
    Registry& reg = Shares();
    absl::MutexLock lock(&reg.mu);
    const auto it = reg.owned.find(ptr);
    if (it == reg.owned.end()) return false;
    o = std::move(it->second);
    reg.owned.erase(it);
  }
  if (o->server.joinable()) o->server.join();
  if (o->fd >= 0) ::close(o->fd);
  const Driver& d = TheDriver();
  const auto va = reinterpret_cast<CUdeviceptr>(ptr);
  d.unmap(va, o->size);
  d.address_free(va, o->size);
  d.release(o->handle);
  return true;
}

bool Close(void* ptr) {
  size_t size = 0;
  {
    Registry& reg = Shares();
    absl::MutexLock lock(&reg.mu);
    const auto it = reg.mapped.find(ptr);
    if (it == reg.mapped.end()) return false;
    size = it->second;
    reg.mapped.erase(it);
  }
  const Driver& d = TheDriver();
  const auto va = reinterpret_cast<CUdeviceptr>(ptr);
  d.unmap(va, size);
  d.address_free(va, size);
  return true;
}

}  // namespace graphshard::trainer::vmm
