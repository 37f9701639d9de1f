#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainer/shared_tier_probe.h"

namespace graphshard::trainer {
namespace {

// Ids uniform over [0, range): a splitmix64 of the position.
__global__ void UniformIdsKernel(int64_t* ids, int64_t n, int64_t range) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t x = (static_cast<uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  ids[i] = static_cast<int64_t>((x ^ (x >> 31)) % static_cast<uint64_t>(range));
}

// Device memory freed at scope exit.
struct DeviceBuffer {
  void* ptr = nullptr;
  int device = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr == nullptr) return;
    int was = 0;
    cudaGetDevice(&was);
    cudaSetDevice(device);
    cudaFree(ptr);
    cudaSetDevice(was);
  }
  bool Allocate(int on, size_t bytes) {
    int was = 0;
    cudaGetDevice(&was);
    cudaSetDevice(on);
    device = on;
    const bool ok = cudaMalloc(&ptr, bytes) == cudaSuccess;
    if (!ok) ptr = nullptr;
    cudaSetDevice(was);
    cudaGetLastError();
    return ok;
  }
};

std::string LastError(const char* what) {
  return std::string(what) + ": " + cudaGetErrorString(cudaGetLastError());
}

// The gather of `a` alone: the stream's queued work first, then the kernel between two events.
// Milliseconds, or < 0 with `error`.
double TimeAlone(const ShardedGatherArgs& a, cudaStream_t s, std::string* error) {
  cudaEvent_t start, stop;
  if (cudaEventCreate(&start) != cudaSuccess) {
    *error = LastError("cudaEventCreate");
    return -1;
  }
  if (cudaEventCreate(&stop) != cudaSuccess) {
    cudaEventDestroy(start);
    *error = LastError("cudaEventCreate");
    return -1;
  }
  float ms = -1;
  if (cudaStreamSynchronize(s) != cudaSuccess || cudaEventRecord(start, s) != cudaSuccess) {
    *error = LastError("waiting for the stream");
  } else if (!LaunchShardedGather(a, s, error)) {
    // `error` says why
  } else if (cudaEventRecord(stop, s) != cudaSuccess || cudaEventSynchronize(stop) != cudaSuccess ||
             cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) {
    *error = LastError("timing the gather");
    ms = -1;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

// `n` ids in `ids` gathered from the one table at `table` ([rows, row_bytes]), timed alone.
double TimeTable(uint64_t table, int64_t rows, const int64_t* ids, int64_t n, int64_t row_bytes,
                 void* out, cudaStream_t s, std::string* error) {
  DeviceBuffer where;
  int device = 0;
  cudaGetDevice(&device);
  if (!where.Allocate(device, sizeof(table)) ||
      cudaMemcpy(where.ptr, &table, sizeof(table), cudaMemcpyHostToDevice) != cudaSuccess) {
    *error = LastError("the table's address");
    return -1;
  }
  return TimeAlone({.ids = ids,
                    .n = n,
                    .shares = static_cast<const uint64_t*>(where.ptr),
                    .share_rows = rows,
                    .out = out,
                    .row_bytes = row_bytes},
                   s, error);
}

class Reporter {
 public:
  Reporter(std::ostream& log, int device) : log_(log), device_(device) {}
  void Line(const std::string& what, int64_t rows, double ms, int64_t row_bytes,
            const std::string& error) {
    log_ << "graphshard-trainer: shared tier probe (GPU " << device_ << "): " << what << ": "
         << rows << " rows, ";
    if (ms < 0) {
      log_ << "failed (" << error << ")\n";
    } else {
      log_ << ms << " ms, " << static_cast<double>(rows * row_bytes) / (ms * 1e6) << " GB/s\n";
    }
  }

 private:
  std::ostream& log_;
  int device_;
};

// The detailed report of call 30 (the header's list); the whole gather launched first.
bool Detailed(const SharedTierProbe& p, const ShardedGatherArgs& a, cudaStream_t s,
              std::ostream& log) {
  Reporter report(log, p.device);
  std::string why;
  const double whole = TimeAlone(a, s, &why);
  report.Line("the batch's rows", a.n, whole, a.row_bytes, why);
  if (whole < 0) return false;

  std::vector<int64_t> ids(static_cast<size_t>(a.n));
  if (cudaMemcpy(ids.data(), a.ids, ids.size() * sizeof(int64_t), cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    log << "graphshard-trainer: shared tier probe: " << LastError("reading the ids") << "\n";
    return true;
  }
  const std::string path = p.dir + "/shared_ids." + std::to_string(p.device) + ".bin";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(ids.data(), sizeof(int64_t), ids.size(), f);
    std::fclose(f);
    log << "graphshard-trainer: shared tier probe (GPU " << p.device << "): ids written to " << path
        << " (share_rows " << a.share_rows << ")\n";
  }
  std::vector<int64_t> part[2];  // own share's ids, the others'
  for (const int64_t id : ids) part[id / a.share_rows == p.own_share ? 0 : 1].push_back(id);
  DeviceBuffer d_ids;
  if (!d_ids.Allocate(p.device, std::max<size_t>(1, ids.size()) * sizeof(int64_t))) {
    log << "graphshard-trainer: shared tier probe: " << LastError("cudaMalloc") << "\n";
    return true;
  }
  for (int k = 0; k < 2; ++k) {
    const auto& v = part[k];
    ShardedGatherArgs only = a;
    only.ids = static_cast<const int64_t*>(d_ids.ptr);
    only.n = static_cast<int64_t>(v.size());
    why.clear();
    const double ms = cudaMemcpy(d_ids.ptr, v.data(), v.size() * sizeof(int64_t),
                                 cudaMemcpyHostToDevice) == cudaSuccess
                          ? TimeAlone(only, s, &why)
                          : (why = LastError("cudaMemcpy"), -1.0);
    report.Line(k == 0 ? "its own share's rows alone" : "the other shares' rows alone", only.n, ms,
                a.row_bytes, why);
  }
  // The GPU that holds each share (an address mapped from another process included).
  std::vector<int> share_device;
  for (const uint64_t share : p.shares) {
    cudaPointerAttributes attr{};
    share_device.push_back(cudaPointerGetAttributes(&attr, reinterpret_cast<const void*>(share)) ==
                                   cudaSuccess
                               ? attr.device
                               : -1);
    cudaGetLastError();
  }
  const int64_t n = a.n / 2;
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  for (size_t j = 0; j < p.shares.size(); ++j) {
    const int64_t first = static_cast<int64_t>(j) * a.share_rows;
    const int64_t rows = std::min(p.num_rows, first + a.share_rows) - first;
    if (rows <= 0) continue;
    UniformIdsKernel<<<blocks, 256, 0, s>>>(static_cast<int64_t*>(d_ids.ptr), n, rows);
    why.clear();
    const double ms = TimeTable(p.shares[j], rows, static_cast<int64_t*>(d_ids.ptr), n, a.row_bytes,
                                a.out, s, &why);
    report.Line("uniform rows of share " + std::to_string(j) + " (GPU " +
                    std::to_string(share_device[j]) + ")",
                n, ms, a.row_bytes, why);
  }
  // A table this process allocates itself, on each GPU of the group, as large as one share.
  const size_t share_bytes = static_cast<size_t>(a.share_rows) * static_cast<size_t>(a.row_bytes);
  for (const int on : share_device) {
    if (on < 0) continue;
    if (on != p.device) {
      const cudaError_t e = cudaDeviceEnablePeerAccess(on, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
        report.Line("uniform rows of a fresh table on GPU " + std::to_string(on), n, -1,
                    a.row_bytes, std::string("peer access: ") + cudaGetErrorString(e));
        cudaGetLastError();
        continue;
      }
      cudaGetLastError();
    }
    DeviceBuffer table;
    why.clear();
    double ms = -1;
    if (!table.Allocate(on, share_bytes)) {
      why = "cudaMalloc of " + std::to_string(share_bytes >> 20) + " MiB failed";
    } else {
      UniformIdsKernel<<<blocks, 256, 0, s>>>(static_cast<int64_t*>(d_ids.ptr), n, a.share_rows);
      ms = TimeTable(reinterpret_cast<uint64_t>(table.ptr), a.share_rows,
                     static_cast<int64_t*>(d_ids.ptr), n, a.row_bytes, a.out, s, &why);
    }
    report.Line("uniform rows of a fresh table on GPU " + std::to_string(on), n, ms, a.row_bytes,
                why);
  }
  // The batch's rows once more: the cases above wrote over them in `out`.
  why.clear();
  const double again = TimeAlone(a, s, &why);
  report.Line("the batch's rows again", a.n, again, a.row_bytes, why);
  if (again < 0 && !LaunchShardedGather(a, s, &why)) {
    log << "graphshard-trainer: shared tier probe: " << why << "\n";
  }
  return true;
}

}  // namespace

std::string SharedTierProbeDir() {
  const char* dir = std::getenv("GRAPHSHARD_SHARED_TIER_PROBE");
  return dir == nullptr ? std::string() : std::string(dir);
}

bool ProbeSharedGather(const SharedTierProbe& probe, const ShardedGatherArgs& args, int64_t call,
                       void* stream, std::ostream& log) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (call == 30) return Detailed(probe, args, s, log);
  if (call < 30 || call % 100 != 30) return false;
  std::string why;
  const double ms = TimeAlone(args, s, &why);
  Reporter(log, probe.device)
      .Line("the batch's rows (call " + std::to_string(call) + ")", args.n, ms, args.row_bytes,
            why);
  return ms >= 0;
}

}  // namespace graphshard::trainer
