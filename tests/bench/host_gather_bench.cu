// What bounds the tiered feature store's host tier: the GPU reading feature rows in place from
// page-locked host memory (zero-copy), per kind of host memory, against the same gather from
// GPU memory and against one DMA of the same bytes (PCIe's own rate, measured in the same run).
//
//   nvcc -O2 -std=c++17 -arch=sm_90 tests/bench/host_gather_bench.cu -o host_gather_bench
//   ./host_gather_bench --table-gib 32 --rows-per-batch 332000 --file /dev/shm/x.bin
//   ./host_gather_bench --table-gib 27 --cases dma,device,peer,peer_ipc,sharded_both
//
// Kinds of host memory (every one registered or allocated as mapped, page-locked):
//   alloc     cudaHostAlloc(cudaHostAllocMapped): the driver's own pinned pages
//   anon_4k   malloc'd, MADV_NOHUGEPAGE, cudaHostRegister(Mapped)
//   anon_2m   2 MiB-aligned, MADV_HUGEPAGE (transparent huge pages), cudaHostRegister(Mapped)
//   file      a file mapped read-only and cudaHostRegister(Mapped | ReadOnly): what the trainer
//             does with the servers' part files (--file; /dev/shm or a disk's page cache)
//   staged    CPU threads copy the rows into a pinned buffer, then one DMA (the alternative the
//             host tier could use)
// and, where a second GPU is there and peer access works, "peer": the table in GPU 1's memory,
// gathered by GPU 0 (a table sharded across a host's GPUs, read over NVLink); "peer_ipc": the
// same table allocated by another process (this program, exec'd with --export-gib) and mapped
// here through CUDA IPC, as the trainers of the shared device tier map each other's shares;
// "sharded_both": the shared device tier's kernel shape in one process, each GPU holding a
// share of --table-gib and both gathering at once from the two shares (ids uniform over both;
// id / share rows picks the share), GB/s per GPU; "sharded_busy": that gather beside a stand-in
// for the step's aggregation, on one stream and on two (ShardedBusy says how); "sharded_ipc":
// the two shares in two processes, each mapping the other's through CUDA IPC, as the trainers;
// "sharded_ipc_nccl" (built with NCCL, HGB_NCCL): the same with a 2-rank NCCL communicator
// between the processes, set up before the shares and after them (and before, the shares
// written from pageable host memory; and VMM shares with NCCL first); "sharded_ipc_h2d":
// sharded_ipc with the shares so written; "sharded_vmm": sharded_ipc with shares made by CUDA's
// VMM API and shared as file descriptors over a Unix socket (as NCCL shares its buffers);
// "sharded_pages": the same over shares of 2 MiB pages, of one allocation, and cudaMalloc'd into
// a fragmented GPU (ShardedPages);
// --ids-files A,B --share-rows R: only "sharded_replay", a trainer's own ids (ShardedReplay).
// "band": a share of the reads in the table's first 0.5-2 GiB (Main says how).
// "host_busy": the host gather beside stand-ins for the step's kernels on another stream, per
// way of gathering (HostBusy says which).
// Rows are 512 bytes (128 float32, as the papers-shaped graph's; -DHGB_ROW_BYTES=400 for the
// products-shaped graph's 100 float32) and the ids uniform over the table; each case gathers
// --batches batches after one warm-up batch. Prints one JSON line per case: GB/s of rows and
// its ratio to the DMA of the same bytes.
#include <cuda.h>
#include <cuda_runtime.h>
#ifdef HGB_NCCL
#include <nccl.h>
#endif
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

#ifndef HGB_ROW_BYTES
#define HGB_ROW_BYTES 512
#endif
constexpr int64_t kRowBytes = HGB_ROW_BYTES;
static_assert(kRowBytes > 0 && kRowBytes % 16 == 0, "HGB_ROW_BYTES: a multiple of 16 bytes");
constexpr int64_t kWords = kRowBytes / 16;

#define CHECK_CUDA(expr)                                                             \
  do {                                                                               \
    cudaError_t err_ = (expr);                                                       \
    if (err_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "host_gather_bench: %s: %s\n", #expr, cudaGetErrorString(err_)); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

// One warp per row, 16 bytes a lane: the trainer's tiered gather kernel's access pattern.
__global__ void Gather(const int64_t* ids, int64_t n, const uint4* table, uint4* out) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < n;
       i += warps) {
    const uint4* src = table + ids[i] * kWords;
    for (int64_t w = lane; w < kWords; w += 32) out[i * kWords + w] = src[w];
  }
}

// The shared device tier's kernel (trainer/tiered_gather.cu, ShardedGatherKernel): row `id` of
// share id / share_rows, one warp per row.
__global__ void ShardedGather(const int64_t* ids, int64_t n, const uint64_t* shares,
                              int64_t share_rows, uint4* out) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < n;
       i += warps) {
    const int64_t id = ids[i];
    const uint4* src =
        reinterpret_cast<const uint4*>(shares[id / share_rows]) + (id % share_rows) * kWords;
    for (int64_t w = lane; w < kWords; w += 32) out[i * kWords + w] = src[w];
  }
}

// A stand-in for the step's aggregation (index_add): x's rows added into out[dst[e]] with
// atomics, one thread per (edge, 4 features).
__global__ void ScatterAdd(const float4* x, const int32_t* dst, int64_t edges, int64_t f4,
                           float* out) {
  const int64_t n = edges * f4;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t e = i / f4, c = i % f4;
    const float4 v = x[i];
    float* o = out + (static_cast<int64_t>(dst[e]) * f4 + c) * 4;
    atomicAdd(o, v.x);
    atomicAdd(o + 1, v.y);
    atomicAdd(o + 2, v.z);
    atomicAdd(o + 3, v.w);
  }
}

struct Options {
  std::string cases;  // comma-separated; empty: every case
  double export_gib = 0;  // > 0: the --export-gib child (peer_ipc)
  double ipc_side_gib = 0;  // > 0: the --ipc-side-gib child (sharded_ipc)
  int nccl_mode = 0;        // sharded_ipc: 1 NCCL set up before the shares, 2 after them
  bool fill_h2d = false;    // sharded_ipc: shares written by copies from pageable host memory
  bool vmm = false;         // sharded_ipc: shares made and shared with CUDA's VMM API, not IPC
  int sock_fd = -1;         // sharded_ipc with vmm: the socket the shares' file descriptors cross
  std::string ids_files;    // sharded_replay: "GPU0's,GPU1's" ids (int64) a trainer wrote
  int64_t share_rows = 0;   // sharded_replay: rows per share (the trainer's log says)
  double table_gib = 32;
  int64_t rows_per_batch = 332000;
  int batches = 10;
  std::string file;
  int threads = 16;
};

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void FillPages(char* p, size_t bytes, int threads) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([=] {
      const size_t lo = bytes / threads * t, hi = t + 1 == threads ? bytes : bytes / threads * (t + 1);
      for (size_t i = lo; i < hi; i += 4096) p[i] = static_cast<char>(i >> 12);
    });
  }
  for (auto& th : pool) th.join();
}

void Emit(const char* kind, const Options& o, double gbps, double dma_gbps, double setup_s) {
  std::printf(
      "{\"name\": \"host_gather_%s\", \"value\": %.2f, \"unit\": \"GB/s\", \"vs_dma\": %.3f, "
      "\"dma_gbps\": %.2f, \"table_gib\": %.1f, \"rows_per_batch\": %lld, \"row_bytes\": %lld, "
      "\"setup_s\": %.2f}\n",
      kind, gbps, gbps / dma_gbps, dma_gbps, o.table_gib, static_cast<long long>(o.rows_per_batch),
      static_cast<long long>(kRowBytes), setup_s);
  std::fflush(stdout);
}

// GB/s of rows of --batches gathers from `table` (device-addressable) into device memory.
double TimeGather(const uint4* table, const int64_t* d_ids, uint4* d_out, const Options& o,
                  cudaStream_t s) {
  const int blocks = static_cast<int>(std::min<int64_t>((o.rows_per_batch + 7) / 8, 1 << 20));
  Gather<<<blocks, 256, 0, s>>>(d_ids, o.rows_per_batch, table, d_out);  // warm-up
  CHECK_CUDA(cudaStreamSynchronize(s));
  const double t = Seconds();
  for (int b = 0; b < o.batches; ++b) Gather<<<blocks, 256, 0, s>>>(d_ids, o.rows_per_batch, table, d_out);
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaGetLastError());
  return static_cast<double>(o.rows_per_batch) * kRowBytes * o.batches / (Seconds() - t) / 1e9;
}

bool Want(const Options& o, const char* kind) {
  if (o.cases.empty()) return true;
  const std::string list = "," + o.cases + ",";
  return list.find("," + std::string(kind) + ",") != std::string::npos;
}

// --export-gib: allocate the table on GPU 1, print its CUDA IPC handle (hex) on stdout, keep it
// until stdin closes.
int ExportChild(const Options& o) {
  const size_t bytes = static_cast<size_t>(o.export_gib * (1ull << 30)) / (2u << 20) * (2u << 20);
  CHECK_CUDA(cudaSetDevice(1));
  void* table;
  CHECK_CUDA(cudaMalloc(&table, bytes));
  CHECK_CUDA(cudaMemset(table, 1, bytes));
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaIpcMemHandle_t h;
  CHECK_CUDA(cudaIpcGetMemHandle(&h, table));
  const auto* b = reinterpret_cast<const unsigned char*>(&h);
  for (size_t i = 0; i < sizeof(h); ++i) std::printf("%02x", b[i]);
  std::printf("\n");
  std::fflush(stdout);
  char buf[64];
  while (::read(0, buf, sizeof(buf)) > 0) {
  }
  CHECK_CUDA(cudaFree(table));
  return 0;
}

// A table of `gib` on GPU 1 allocated by a child process (this program with --export-gib),
// mapped here; `child` / `to_child` to end it (close, then waitpid). Null on failure.
void* OpenExported(double gib, pid_t* child, int* to_child) {
  int down[2], up[2];
  if (::pipe(down) != 0 || ::pipe(up) != 0) return nullptr;
  const std::string g = std::to_string(gib);
  *child = ::fork();
  if (*child == 0) {
    ::dup2(down[0], 0);
    ::dup2(up[1], 1);
    ::close(down[1]);
    ::close(up[0]);
    char* const args[] = {const_cast<char*>("host_gather_bench"), const_cast<char*>("--export-gib"),
                          const_cast<char*>(g.c_str()), nullptr};
    ::execv("/proc/self/exe", args);
    std::_Exit(127);
  }
  ::close(down[0]);
  ::close(up[1]);
  *to_child = down[1];
  std::string hex;
  char c;
  while (::read(up[0], &c, 1) == 1 && c != '\n') hex += c;
  ::close(up[0]);
  cudaIpcMemHandle_t h;
  if (hex.size() != 2 * sizeof(h)) {
    std::fprintf(stderr, "host_gather_bench: the exporting child sent no handle\n");
    return nullptr;
  }
  auto* b = reinterpret_cast<unsigned char*>(&h);
  for (size_t i = 0; i < sizeof(h); ++i) b[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  void* ptr = nullptr;
  CHECK_CUDA(cudaIpcOpenMemHandle(&ptr, h, cudaIpcMemLazyEnablePeerAccess));
  return ptr;
}

// sharded_busy: the shared tier's gather (as in sharded_both, both GPUs) next to a stand-in
// for the step's aggregation (ScatterAdd, ~ the step's memory traffic), three ways per batch:
// the stand-in alone, one stream (gather, then the stand-in: the gather on the compute
// stream), and two streams (the gather on a high-priority stream beside the stand-in: the
// trainer's read-ahead). Prints ms per batch of each and the gather's own ms (sharded_both).
void ShardedBusy(const Options& o, int blocks, int64_t* const ids2[2],
                 uint64_t* const d_shares[2], int64_t rows, uint4* const out2[2],
                 double gather_s) {
  constexpr int64_t kEdges = 1 << 20, kF4 = 64, kOutRows = 150000;
  float4* x[2];
  int32_t* dst[2];
  float* agg[2];
  cudaStream_t hi[2], lo[2];
  std::vector<int32_t> h_dst(kEdges);
  std::mt19937 rng(2);
  for (auto& d : h_dst) d = static_cast<int32_t>(rng() % kOutRows);
  int least = 0, greatest = 0;
  for (int g = 0; g < 2; ++g) {
    CHECK_CUDA(cudaSetDevice(g));
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK_CUDA(cudaStreamCreateWithPriority(&hi[g], cudaStreamNonBlocking, greatest));
    CHECK_CUDA(cudaStreamCreateWithPriority(&lo[g], cudaStreamNonBlocking, least));
    CHECK_CUDA(cudaMalloc(&x[g], kEdges * kF4 * sizeof(float4)));
    CHECK_CUDA(cudaMemset(x[g], 0, kEdges * kF4 * sizeof(float4)));
    CHECK_CUDA(cudaMalloc(&dst[g], kEdges * sizeof(int32_t)));
    CHECK_CUDA(cudaMemcpy(dst[g], h_dst.data(), kEdges * sizeof(int32_t), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMalloc(&agg[g], kOutRows * kF4 * sizeof(float4)));
  }
  const auto busy = [&](int g, cudaStream_t st) {
    ScatterAdd<<<2048, 256, 0, st>>>(x[g], dst[g], kEdges, kF4, agg[g]);
  };
  const auto gather = [&](int g, cudaStream_t st) {
    ShardedGather<<<blocks, 256, 0, st>>>(ids2[g], o.rows_per_batch, d_shares[g], rows, out2[g]);
  };
  const auto sync = [&] {
    for (int g = 0; g < 2; ++g) {
      CHECK_CUDA(cudaSetDevice(g));
      CHECK_CUDA(cudaDeviceSynchronize());
    }
  };
  // mode 0: the stand-in alone; 1: one stream; 2: two streams.
  const auto run = [&](int mode) {
    const int n = 4 * o.batches;
    sync();
    const double t = Seconds();
    for (int b = 0; b < n; ++b) {
      for (int g = 0; g < 2; ++g) {
        CHECK_CUDA(cudaSetDevice(g));
        if (mode == 1) gather(g, lo[g]);
        if (mode == 2) gather(g, hi[g]);
        busy(g, lo[g]);
      }
    }
    sync();
    CHECK_CUDA(cudaGetLastError());
    return (Seconds() - t) / n * 1e3;
  };
  run(0);  // warm-up
  const double alone = run(0), serial = run(1), overlapped = run(2);
  std::printf(
      "{\"name\": \"host_gather_sharded_busy\", \"gather_ms\": %.3f, \"standin_ms\": %.3f, "
      "\"one_stream_ms\": %.3f, \"two_streams_ms\": %.3f, \"two_vs_one\": %.3f, "
      "\"table_gib\": %.1f, \"rows_per_batch\": %lld}\n",
      gather_s * 1e3, alone, serial, overlapped, overlapped / serial, o.table_gib,
      static_cast<long long>(o.rows_per_batch));
  std::fflush(stdout);
  for (int g = 0; g < 2; ++g) {
    CHECK_CUDA(cudaSetDevice(g));
    CHECK_CUDA(cudaFree(x[g]));
    CHECK_CUDA(cudaFree(dst[g]));
    CHECK_CUDA(cudaFree(agg[g]));
    CHECK_CUDA(cudaStreamDestroy(hi[g]));
    CHECK_CUDA(cudaStreamDestroy(lo[g]));
  }
  CHECK_CUDA(cudaSetDevice(0));
}

// ms per batch of --batches gathers by the tier's kernel on both GPUs at once (GPU g: n[g] ids
// at d_ids[g] over the shares at d_shares[g], share_rows each), after one warm-up batch.
double TimeBothGpus(const Options& o, int64_t* const d_ids[2], const int64_t n[2],
                    uint64_t* const d_shares[2], int64_t share_rows, uint4* const d_out[2]) {
  double t = 0;
  for (int b = 0; b <= o.batches; ++b) {
    if (b == 1) t = Seconds();
    for (int g = 0; g < 2; ++g) {
      CHECK_CUDA(cudaSetDevice(g));
      const int blocks = static_cast<int>(std::min<int64_t>((n[g] + 7) / 8, 1 << 20));
      ShardedGather<<<blocks, 256>>>(d_ids[g], n[g], d_shares[g], share_rows, d_out[g]);
    }
    for (int g = 0; g < 2; ++g) {
      CHECK_CUDA(cudaSetDevice(g));
      CHECK_CUDA(cudaDeviceSynchronize());
    }
  }
  CHECK_CUDA(cudaGetLastError());
  return (Seconds() - t) / o.batches * 1e3;
}

std::vector<int64_t> ReadIds(const std::string& path) {
  std::vector<int64_t> ids;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    std::fprintf(stderr, "host_gather_bench: cannot open %s\n", path.c_str());
    std::exit(2);
  }
  int64_t v;
  while (std::fread(&v, sizeof(v), 1, f) == 1) ids.push_back(v);
  std::fclose(f);
  return ids;
}

// sharded_replay: a trainer's ids (GRAPHSHARD_SHARED_TIER_TIMING wrote them) gathered by the
// shared tier's kernel, each GPU a share of --share-rows rows, both GPUs at once; the same ids
// shuffled, sorted, and as many uniform ones. One JSON line of ms per batch of each.
void ShardedReplay(const Options& o) {
  const size_t comma = o.ids_files.find(',');
  std::vector<int64_t> real[2] = {ReadIds(o.ids_files.substr(0, comma)),
                                  ReadIds(comma == std::string::npos
                                              ? o.ids_files
                                              : o.ids_files.substr(comma + 1))};
  const int64_t rows = o.share_rows;
  const size_t bytes = static_cast<size_t>(rows) * kRowBytes;
  void* share[2];
  uint64_t* d_shares[2];
  int64_t* d_ids[2];
  uint4* d_out[2];
  for (int g = 0; g < 2; ++g) {
    CHECK_CUDA(cudaSetDevice(g));
    CHECK_CUDA(cudaMalloc(&share[g], bytes));
    CHECK_CUDA(cudaMemset(share[g], 1, bytes));
    const size_t n = real[g].size();
    CHECK_CUDA(cudaMalloc(&d_ids[g], n * sizeof(int64_t)));
    CHECK_CUDA(cudaMalloc(&d_out[g], n * kRowBytes));
    CHECK_CUDA(cudaDeviceEnablePeerAccess(1 - g, 0));
  }
  const uint64_t where[2] = {reinterpret_cast<uint64_t>(share[0]),
                             reinterpret_cast<uint64_t>(share[1])};
  for (int g = 0; g < 2; ++g) {
    CHECK_CUDA(cudaSetDevice(g));
    CHECK_CUDA(cudaMalloc(&d_shares[g], sizeof(where)));
    CHECK_CUDA(cudaMemcpy(d_shares[g], where, sizeof(where), cudaMemcpyHostToDevice));
  }
  std::mt19937_64 rng(5);
  const auto time_ids = [&](const std::vector<int64_t>* ids) {
    for (int g = 0; g < 2; ++g) {
      CHECK_CUDA(cudaSetDevice(g));
      CHECK_CUDA(cudaMemcpy(d_ids[g], ids[g].data(), ids[g].size() * sizeof(int64_t),
                            cudaMemcpyHostToDevice));
    }
    const int64_t n[2] = {static_cast<int64_t>(ids[0].size()), static_cast<int64_t>(ids[1].size())};
    return TimeBothGpus(o, d_ids, n, d_shares, rows, d_out);
  };
  int64_t lo = 0, hi = 0, own = 0;
  for (int g = 0; g < 2; ++g) {
    for (const int64_t id : real[g]) {
      if (id < 0 || id >= 2 * rows) {
        std::fprintf(stderr, "host_gather_bench: id %lld outside the two shares\n",
                     static_cast<long long>(id));
        std::exit(2);
      }
      lo = std::min(lo, id);
      hi = std::max(hi, id);
      if (g == 0) own += id < rows ? 1 : 0;
    }
  }
  const double real_ms = time_ids(real);
  std::vector<int64_t> shuffled[2] = {real[0], real[1]};
  for (auto& v : shuffled) std::shuffle(v.begin(), v.end(), rng);
  const double shuffled_ms = time_ids(shuffled);
  std::vector<int64_t> sorted[2] = {real[0], real[1]};
  for (auto& v : sorted) std::sort(v.begin(), v.end());
  const double sorted_ms = time_ids(sorted);
  std::vector<int64_t> uniform[2] = {real[0], real[1]};
  std::uniform_int_distribution<int64_t> pick(0, 2 * rows - 1);
  for (auto& v : uniform)
    for (auto& id : v) id = pick(rng);
  const double uniform_ms = time_ids(uniform);
  std::vector<int64_t> distinct = real[0];
  std::sort(distinct.begin(), distinct.end());
  const int64_t unique =
      std::unique(distinct.begin(), distinct.end()) - distinct.begin();
  std::printf(
      "{\"name\": \"host_gather_sharded_replay\", \"rows\": %zu, \"unique_rows\": %lld, "
      "\"own_rows\": %lld, \"max_id\": %lld, \"share_rows\": %lld, \"real_ms\": %.3f, "
      "\"shuffled_ms\": %.3f, \"sorted_ms\": %.3f, \"uniform_ms\": %.3f}\n",
      real[0].size(), static_cast<long long>(unique), static_cast<long long>(own),
      static_cast<long long>(hi), static_cast<long long>(rows), real_ms, shuffled_ms, sorted_ms,
      uniform_ms);
  std::fflush(stdout);
  for (int g = 0; g < 2; ++g) {
    CHECK_CUDA(cudaSetDevice(g));
    CHECK_CUDA(cudaDeviceDisablePeerAccess(1 - g));
    CHECK_CUDA(cudaFree(share[g]));
    CHECK_CUDA(cudaFree(d_shares[g]));
    CHECK_CUDA(cudaFree(d_ids[g]));
    CHECK_CUDA(cudaFree(d_out[g]));
  }
  CHECK_CUDA(cudaSetDevice(0));
}

#define CHECK_CU(expr)                                                              \
  do {                                                                              \
    CUresult r_ = (expr);                                                           \
    if (r_ != CUDA_SUCCESS) {                                                       \
      const char* m_ = nullptr;                                                     \
      cuGetErrorString(r_, &m_);                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, m_ ? m_ : "?"); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

// A share of `bytes` on GPU g built from physical allocations of `chunk` bytes each (CUDA's
// virtual memory management), mapped at one address and readable from both GPUs: with 2 MiB
// chunks no page can be larger than 2 MiB.
void* ChunkedShare(int g, size_t bytes, size_t chunk) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = g;
  CUdeviceptr va;
  CHECK_CU(cuMemAddressReserve(&va, bytes, 0, 0, 0));
  for (size_t off = 0; off < bytes; off += chunk) {
    CUmemGenericAllocationHandle h;
    CHECK_CU(cuMemCreate(&h, std::min(chunk, bytes - off), &prop, 0));
    CHECK_CU(cuMemMap(va + off, std::min(chunk, bytes - off), 0, h, 0));
    CHECK_CU(cuMemRelease(h));
  }
  CUmemAccessDesc access[2] = {};
  for (int d = 0; d < 2; ++d) {
    access[d].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[d].location.id = d;
    access[d].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  CHECK_CU(cuMemSetAccess(va, bytes, access, 2));
  return reinterpret_cast<void*>(va);
}

// sharded_pages: the sharded_both gather over shares made of 2 MiB physical allocations and
// of one allocation each (VMM), and over cudaMalloc'd shares allocated after the GPU's memory
// was cut into 2 MiB pieces (`--table-gib` more of them, every other one freed): what the
// page size does to a random gather over two large shares. ms per batch of each.
void ShardedPages(const Options& o, size_t bytes, int64_t rows, const std::vector<int64_t>& both) {
  const int64_t n = static_cast<int64_t>(both.size());
  int64_t* d_ids[2];
  uint4* d_out[2];
  uint64_t* d_shares[2];
  for (int g = 0; g < 2; ++g) {
    CHECK_CUDA(cudaSetDevice(g));
    CHECK_CUDA(cudaDeviceEnablePeerAccess(1 - g, 0));  // for the cudaMalloc'd shares
    CHECK_CUDA(cudaMalloc(&d_ids[g], n * sizeof(int64_t)));
    CHECK_CUDA(cudaMemcpy(d_ids[g], both.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMalloc(&d_out[g], n * kRowBytes));
    CHECK_CUDA(cudaMalloc(&d_shares[g], 2 * sizeof(uint64_t)));
  }
  const auto time_shares = [&](void* const share[2]) {
    const uint64_t where[2] = {reinterpret_cast<uint64_t>(share[0]),
                               reinterpret_cast<uint64_t>(share[1])};
    for (int g = 0; g < 2; ++g) {
      CHECK_CUDA(cudaSetDevice(g));
      CHECK_CUDA(cudaMemcpy(d_shares[g], where, sizeof(where), cudaMemcpyHostToDevice));
    }
    const int64_t both_n[2] = {n, n};
    return TimeBothGpus(o, d_ids, both_n, d_shares, rows, d_out);
  };
  double ms[3];
  for (int k = 0; k < 2; ++k) {
    const size_t chunk = k == 0 ? (size_t{2} << 20) : bytes;
    void* share[2];
    for (int g = 0; g < 2; ++g) {
      CHECK_CUDA(cudaSetDevice(g));
      share[g] = ChunkedShare(g, bytes, chunk);
    }
    ms[k] = time_shares(share);
    std::fprintf(stderr, "[host-gather] sharded_pages chunk %zu: %.3f ms\n", chunk, ms[k]);
    for (int g = 0; g < 2; ++g) {
      CHECK_CUDA(cudaSetDevice(g));
      CHECK_CU(cuMemUnmap(reinterpret_cast<CUdeviceptr>(share[g]), bytes));
      CHECK_CU(cuMemAddressFree(reinterpret_cast<CUdeviceptr>(share[g]), bytes));
    }
  }
  {
    std::vector<void*> pieces[2];
    void* share[2];
    for (int g = 0; g < 2; ++g) {
      CHECK_CUDA(cudaSetDevice(g));
      for (size_t done = 0; done < bytes; done += size_t{2} << 20) {
        void* p;
        CHECK_CUDA(cudaMalloc(&p, size_t{2} << 20));
        pieces[g].push_back(p);
      }
      for (size_t i = 0; i < pieces[g].size(); i += 2) CHECK_CUDA(cudaFree(pieces[g][i]));
      CHECK_CUDA(cudaMalloc(&share[g], bytes));
      CHECK_CUDA(cudaMemset(share[g], 1, bytes));
    }
    ms[2] = time_shares(share);
    for (int g = 0; g < 2; ++g) {
      CHECK_CUDA(cudaSetDevice(g));
      CHECK_CUDA(cudaFree(share[g]));
      for (size_t i = 1; i < pieces[g].size(); i += 2) CHECK_CUDA(cudaFree(pieces[g][i]));
    }
  }
  std::printf(
      "{\"name\": \"host_gather_sharded_pages\", \"pages_2mib_ms\": %.3f, "
      "\"one_allocation_ms\": %.3f, \"after_fragmenting_ms\": %.3f, \"table_gib\": %.1f, "
      "\"rows_per_batch\": %lld}\n",
      ms[0], ms[1], ms[2], o.table_gib, static_cast<long long>(n));
  std::fflush(stdout);
  for (int g = 0; g < 2; ++g) {
    CHECK_CUDA(cudaSetDevice(g));
    CHECK_CUDA(cudaFree(d_ids[g]));
    CHECK_CUDA(cudaFree(d_out[g]));
    CHECK_CUDA(cudaFree(d_shares[g]));
    CHECK_CUDA(cudaDeviceDisablePeerAccess(1 - g));
  }
  CHECK_CUDA(cudaSetDevice(0));
}

std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

void WriteLine(int fd, const std::string& line) {
  const std::string l = line + "\n";
  if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) {
    std::fprintf(stderr, "host_gather_bench: pipe write failed\n");
    std::exit(1);
  }
}

// One side of sharded_ipc, as a trainer of the shared device tier: its share of `gib` on GPU
// `g`, its handle sent and the other side's mapped through CUDA IPC, then (both ready) 4 x
// --batches gathers of ids uniform over both shares. Returns ms per batch.
#ifdef HGB_NCCL
// A 2-rank NCCL communicator between the two sides, connected by one all-reduce (NCCL sets up
// its peer connections at the first collective), as the trainers' gradients' communicator.
ncclComm_t NcclUp(int g, const std::string& id_hex) {
  ncclUniqueId id;
  auto* b = reinterpret_cast<unsigned char*>(&id);
  for (size_t i = 0; i < sizeof(id); ++i)
    b[i] = static_cast<unsigned char>(std::stoi(id_hex.substr(2 * i, 2), nullptr, 16));
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, 2, id, g) != ncclSuccess) {
    std::fprintf(stderr, "host_gather_bench: ncclCommInitRank failed\n");
    std::exit(1);
  }
  float* x;
  CHECK_CUDA(cudaMalloc(&x, 4 << 20));
  CHECK_CUDA(cudaMemset(x, 0, 4 << 20));
  if (ncclAllReduce(x, x, 1 << 20, ncclFloat, ncclSum, comm, nullptr) != ncclSuccess) {
    std::fprintf(stderr, "host_gather_bench: ncclAllReduce failed\n");
    std::exit(1);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(x));
  return comm;  // kept until both sides are done, as the trainers keep theirs
}
#endif

std::string ToHex(const void* p, size_t n) {
  std::string hex;
  for (size_t i = 0; i < n; ++i) {
    char two[3];
    std::snprintf(two, sizeof(two), "%02x", static_cast<const unsigned char*>(p)[i]);
    hex += two;
  }
  return hex;
}

// A file descriptor sent over / received from a Unix socket (SCM_RIGHTS); -1 on failure.
void SendFd(int sock, int fd) {
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  if (::sendmsg(sock, &msg, 0) != 1) {
    std::fprintf(stderr, "host_gather_bench: sendmsg: %s\n", std::strerror(errno));
    std::exit(1);
  }
}

int RecvFd(int sock) {
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (::recvmsg(sock, &msg, 0) != 1) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

// A share of `bytes` on GPU g made with CUDA's VMM API, exportable as a file descriptor (as
// NCCL's own peer buffers are): its handle in `*handle`, its size rounded up in `*size`.
void* VmmShare(int g, size_t bytes, CUmemGenericAllocationHandle* handle, size_t* size) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = g;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  *size = (bytes + gran - 1) / gran * gran;
  CHECK_CU(cuMemCreate(handle, *size, &prop, 0));
  CUdeviceptr va;
  CHECK_CU(cuMemAddressReserve(&va, *size, gran, 0, 0));
  CHECK_CU(cuMemMap(va, *size, 0, *handle, 0));
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = g;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_CU(cuMemSetAccess(va, *size, &access, 1));
  return reinterpret_cast<void*>(va);
}

// The other side's VMM share (its descriptor `fd`, `size` bytes) mapped here for GPU g.
void* VmmImport(int g, int fd, size_t size) {
  CUmemGenericAllocationHandle h;
  CHECK_CU(cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  CUdeviceptr va;
  CHECK_CU(cuMemAddressReserve(&va, size, 0, 0, 0));
  CHECK_CU(cuMemMap(va, size, 0, h, 0));
  CHECK_CU(cuMemRelease(h));
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = g;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_CU(cuMemSetAccess(va, size, &access, 1));
  return reinterpret_cast<void*>(va);
}

double IpcSide(int g, double gib, const Options& o, int in, int out) {
  const size_t bytes = static_cast<size_t>(gib * (1ull << 30)) / (2u << 20) * (2u << 20);
  const int64_t rows = static_cast<int64_t>(bytes / kRowBytes);
  CHECK_CUDA(cudaSetDevice(g));
  std::string nccl_id;
#ifdef HGB_NCCL
  ncclComm_t comm = nullptr;
  if (o.nccl_mode != 0) {
    if (g == 0) {
      ncclUniqueId id;
      if (ncclGetUniqueId(&id) != ncclSuccess) std::exit(1);
      nccl_id = ToHex(&id, sizeof(id));
      WriteLine(out, nccl_id);
    } else {
      nccl_id = ReadLine(in);
    }
    if (o.nccl_mode == 1) comm = NcclUp(g, nccl_id);
  }
#endif
  void* own;
  CUmemGenericAllocationHandle own_handle = 0;
  size_t vmm_size = 0;
  if (o.vmm) {
    own = VmmShare(g, bytes, &own_handle, &vmm_size);
  } else {
    CHECK_CUDA(cudaMalloc(&own, bytes));
  }
  if (o.fill_h2d) {
    // As the trainers fill theirs: chunks of rows copied from pageable host memory.
    std::vector<char> chunk(size_t{64} << 20, 1);
    for (size_t off = 0; off < bytes; off += chunk.size()) {
      CHECK_CUDA(cudaMemcpy(static_cast<char*>(own) + off, chunk.data(),
                            std::min(chunk.size(), bytes - off), cudaMemcpyHostToDevice));
    }
  } else {
    CHECK_CUDA(cudaMemset(own, 1, bytes));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  void* peer = nullptr;
  if (o.vmm) {
    int fd = -1;
    CHECK_CU(cuMemExportToShareableHandle(&fd, own_handle,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    SendFd(o.sock_fd, fd);
    ::close(fd);
    const int theirs = RecvFd(o.sock_fd);
    if (theirs < 0) {
      std::fprintf(stderr, "host_gather_bench: the other side sent no descriptor\n");
      std::exit(1);
    }
    peer = VmmImport(g, theirs, vmm_size);  // both sides' shares have the same size
    ::close(theirs);
  } else {
    cudaIpcMemHandle_t h;
    CHECK_CUDA(cudaIpcGetMemHandle(&h, own));
    WriteLine(out, ToHex(&h, sizeof(h)));
    const std::string theirs = ReadLine(in);
    if (theirs.size() != 2 * sizeof(h)) {
      std::fprintf(stderr, "host_gather_bench: the other side sent no handle\n");
      std::exit(1);
    }
    auto* hb = reinterpret_cast<unsigned char*>(&h);
    for (size_t i = 0; i < sizeof(h); ++i)
      hb[i] = static_cast<unsigned char>(std::stoi(theirs.substr(2 * i, 2), nullptr, 16));
    CHECK_CUDA(cudaIpcOpenMemHandle(&peer, h, cudaIpcMemLazyEnablePeerAccess));
  }
#ifdef HGB_NCCL
  if (o.nccl_mode == 2) comm = NcclUp(g, nccl_id);
#endif
  uint64_t where[2];
  where[g] = reinterpret_cast<uint64_t>(own);
  where[1 - g] = reinterpret_cast<uint64_t>(peer);
  uint64_t* d_shares;
  CHECK_CUDA(cudaMalloc(&d_shares, sizeof(where)));
  CHECK_CUDA(cudaMemcpy(d_shares, where, sizeof(where), cudaMemcpyHostToDevice));
  std::vector<int64_t> ids(static_cast<size_t>(o.rows_per_batch));
  std::mt19937_64 rng(3 + g);
  std::uniform_int_distribution<int64_t> pick(0, 2 * rows - 1);
  for (auto& id : ids) id = pick(rng);
  int64_t* d_ids;
  uint4* d_out;
  CHECK_CUDA(cudaMalloc(&d_ids, ids.size() * sizeof(int64_t)));
  CHECK_CUDA(cudaMemcpy(d_ids, ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMalloc(&d_out, static_cast<size_t>(o.rows_per_batch) * kRowBytes));
  const int blocks = static_cast<int>(std::min<int64_t>((o.rows_per_batch + 7) / 8, 1 << 20));
  ShardedGather<<<blocks, 256>>>(d_ids, o.rows_per_batch, d_shares, rows, d_out);  // warm-up
  CHECK_CUDA(cudaDeviceSynchronize());
  WriteLine(out, "ready");
  ReadLine(in);
  const int n = 4 * o.batches;
  const double t = Seconds();
  for (int i = 0; i < n; ++i)
    ShardedGather<<<blocks, 256>>>(d_ids, o.rows_per_batch, d_shares, rows, d_out);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaGetLastError());
  const double ms = (Seconds() - t) / n * 1e3;
  WriteLine(out, "done");
  ReadLine(in);  // the other side is done: its reads of this share have ended
#ifdef HGB_NCCL
  if (comm != nullptr) ncclCommDestroy(comm);
#endif
  if (o.vmm) {
    CHECK_CU(cuMemUnmap(reinterpret_cast<CUdeviceptr>(peer), vmm_size));
    CHECK_CU(cuMemAddressFree(reinterpret_cast<CUdeviceptr>(peer), vmm_size));
    CHECK_CU(cuMemUnmap(reinterpret_cast<CUdeviceptr>(own), vmm_size));
    CHECK_CU(cuMemAddressFree(reinterpret_cast<CUdeviceptr>(own), vmm_size));
    CHECK_CU(cuMemRelease(own_handle));
  } else {
    CHECK_CUDA(cudaIpcCloseMemHandle(peer));
    CHECK_CUDA(cudaFree(own));
  }
  CHECK_CUDA(cudaFree(d_shares));
  CHECK_CUDA(cudaFree(d_ids));
  CHECK_CUDA(cudaFree(d_out));
  return ms;
}

// sharded_ipc: the shared device tier as the trainers run it, two processes (this one on GPU 0,
// a child on GPU 1), each mapping the other's share through CUDA IPC and gathering at once.
void ShardedIpc(const Options& o, int nccl_mode, bool fill_h2d, bool vmm) {
  int down[2], up[2], sock[2];
  if (::pipe(down) != 0 || ::pipe(up) != 0) return;
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sock) != 0) return;
  const std::string gib = std::to_string(o.table_gib), rows = std::to_string(o.rows_per_batch),
                    batches = std::to_string(o.batches), mode = std::to_string(nccl_mode);
  Options side = o;
  side.nccl_mode = nccl_mode;
  side.fill_h2d = fill_h2d;
  side.vmm = vmm;
  side.sock_fd = sock[0];
  const std::string fill = fill_h2d ? "1" : "0", use_vmm = vmm ? "1" : "0";
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(down[0], 0);
    ::dup2(up[1], 1);
    ::dup2(sock[1], 3);
    ::close(down[1]);
    ::close(up[0]);
    ::close(sock[0]);
    char* const args[] = {const_cast<char*>("host_gather_bench"),
                          const_cast<char*>("--ipc-side-gib"), const_cast<char*>(gib.c_str()),
                          const_cast<char*>("--vmm"), const_cast<char*>(use_vmm.c_str()),
                          const_cast<char*>("--sock-fd"), const_cast<char*>("3"),
                          const_cast<char*>("--rows-per-batch"), const_cast<char*>(rows.c_str()),
                          const_cast<char*>("--batches"), const_cast<char*>(batches.c_str()),
                          const_cast<char*>("--nccl-mode"), const_cast<char*>(mode.c_str()),
                          const_cast<char*>("--fill-h2d"), const_cast<char*>(fill.c_str()),
                          nullptr};
    ::execv("/proc/self/exe", args);
    std::_Exit(127);
  }
  ::close(down[0]);
  ::close(up[1]);
  ::close(sock[1]);
  const double ms = IpcSide(0, o.table_gib, side, up[0], down[1]);
  ::close(sock[0]);
  const std::string theirs = ReadLine(up[0]);
  ::close(down[1]);
  ::close(up[0]);
  ::waitpid(child, nullptr, 0);
  const double bytes = static_cast<double>(o.rows_per_batch) * kRowBytes;
  std::printf(
      "{\"name\": \"host_gather_sharded_ipc%s\", \"value\": %.2f, \"unit\": \"GB/s\", "
      "\"gpu0_ms\": %.3f, \"gpu1_ms\": %s, \"table_gib\": %.1f, \"rows_per_batch\": %lld, "
      "\"nccl_cumem_enable\": \"%s\"}\n",
      (std::string(vmm ? "_vmm" : "") +
       (nccl_mode == 0 ? "" : nccl_mode == 1 ? "_nccl_first" : "_nccl_after") +
       (fill_h2d ? "_h2d" : ""))
          .c_str(),
      bytes / (ms * 1e-3) / 1e9, ms, theirs.empty() ? "null" : theirs.c_str(), o.table_gib,
      static_cast<long long>(o.rows_per_batch),
      std::getenv("NCCL_CUMEM_ENABLE") ? std::getenv("NCCL_CUMEM_ENABLE") : "");
  std::fflush(stdout);
}

// host_busy: the host tier's zero-copy gather (a cudaHostAlloc'd table) beside a stand-in for
// the step's kernels on another stream, as the trainer runs it (the gather on a high-priority
// stream). Two stand-ins: ScatterAdd (memory-bound atomics, the aggregation) and BusyFma (every
// SM full of arithmetic, the matmuls). Per gather way and stand-in: ms per batch of the gather
// alone, the stand-in alone and both at once; "extra_ms" = both - stand-in alone, what the
// gather adds to a step that keeps the GPU busy. Gather ways: the trainer's kernel (one warp a
// row, n/8 blocks), the same on a 264-block grid, R rows a warp loaded before any is stored on
// a G-block grid (ilpR_gG; ilp8_g16x16 the trainer's shape, trainer/tiered_gather.cu), the
// Tensor Memory Accelerator's bulk copies through shared memory (tmaD_gGxW: GatherTma, D stages
// of 32 rows a warp, G blocks of W warps; checked equal to the plain gather's rows first), and a
// DMA of every row (cudaMemcpyBatchAsync: the copy engines, no SM), with and without its
// overlap-with-compute hint.
template <int R>
__global__ void GatherIlp(const int64_t* ids, int64_t n, const uint4* table, uint4* out) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  for (int64_t base = warp * R; base < n; base += warps * R) {
    constexpr int kPerLane = (kWords + 31) / 32;
    uint4 v[R][kPerLane];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (base + r < n) {
        const uint4* src = table + ids[base + r] * kWords;
#pragma unroll
        for (int w = 0; w < kPerLane; ++w) {
          if (lane + 32 * w < kWords) v[r][w] = src[lane + 32 * w];
        }
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (base + r < n) {
#pragma unroll
        for (int w = 0; w < kPerLane; ++w) {
          if (lane + 32 * w < kWords) out[(base + r) * kWords + lane + 32 * w] = v[r][w];
        }
      }
    }
  }
}

// The same gather through the Tensor Memory Accelerator (sm_90's bulk copies): each lane of a
// warp copies one row at a time, host memory -> shared memory (cp.async.bulk, completion on
// the stage's mbarrier), then shared -> the output (a bulk store), D stages of 32 rows a warp
// in flight. No registers hold the rows and few threads issue them: what the SM gives up to
// the gather is its shared memory (D * 32 rows a warp) rather than its registers.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ inline uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
#endif
template <int D>
__global__ void GatherTma(const int64_t* ids, int64_t n, const uint4* table, uint4* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x % 32;
  const int wib = threadIdx.x / 32;
  const int wpb = blockDim.x / 32;
  unsigned char* rows = smem + static_cast<size_t>(wib) * D * 32 * kRowBytes;
  uint64_t* bars =
      reinterpret_cast<uint64_t*>(smem + static_cast<size_t>(wpb) * D * 32 * kRowBytes) + wib * D;
  if (lane == 0) {
    for (int d = 0; d < D; ++d) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(SmemAddr(&bars[d])), "r"(32)
                   : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int64_t warps = static_cast<int64_t>(gridDim.x) * wpb;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * wpb + wib;
  const int64_t chunks = (n + 31) / 32;
  const int64_t mine = warp < chunks ? (chunks - warp + warps - 1) / warps : 0;
  for (int64_t it = 0; it < mine + D - 1; ++it) {
    if (it < mine) {
      const int s = static_cast<int>(it % D);
      // The stage's last store (this lane's latest bulk group) has read its shared memory.
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      const int64_t row = (warp + it * warps) * 32 + lane;
      const uint32_t bar = SmemAddr(&bars[s]);
      if (row < n) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                     "r"(static_cast<uint32_t>(kRowBytes))
                     : "memory");
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
            "[%3];" ::"r"(SmemAddr(rows + (s * 32 + lane) * kRowBytes)),
            "l"(table + ids[row] * kWords), "r"(static_cast<uint32_t>(kRowBytes)), "r"(bar)
            : "memory");
      } else {
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
      }
    }
    const int64_t done = it - (D - 1);
    if (done >= 0) {
      const int s = static_cast<int>(done % D);
      const uint32_t bar = SmemAddr(&bars[s]);
      const uint32_t parity = static_cast<uint32_t>((done / D) & 1);
      asm volatile(
          "{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
          " @!p bra WAIT_%=;\n}" ::"r"(bar),
          "r"(parity)
          : "memory");
      const int64_t row = (warp + done * warps) * 32 + lane;
      if (row < n) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                         out + row * kWords),
                     "r"(SmemAddr(rows + (s * 32 + lane) * kRowBytes)),
                     "r"(static_cast<uint32_t>(kRowBytes))
                     : "memory");
      }
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}
template <int D>
size_t TmaSmem(int warps_per_block) {
  return static_cast<size_t>(warps_per_block) * D * (32 * kRowBytes + 8);
}

__global__ void BusyFma(float* sink, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-3f;
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, b, c);
    d = fmaf(d, c, b);
    b = fmaf(b, a, d);
    c = fmaf(c, d, a);
  }
  if (a + b + c + d == 0.123f) sink[threadIdx.x] = a;
}

void HostBusy(const Options& o, const std::vector<int64_t>& ids, const int64_t* d_ids, uint4* d_out,
              size_t bytes, double dma) {
  void* host;
  CHECK_CUDA(cudaHostAlloc(&host, bytes, cudaHostAllocMapped));
  FillPages(static_cast<char*>(host), bytes, o.threads);
  void* dev;
  CHECK_CUDA(cudaHostGetDevicePointer(&dev, host, 0));
  const auto* table = static_cast<const uint4*>(dev);
  int sms = 0, least = 0, greatest = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t hi, lo;
  CHECK_CUDA(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&lo, cudaStreamNonBlocking, least));
  constexpr int64_t kEdges = 1 << 20, kF4 = 64, kOutRows = 150000;
  float4* x;
  int32_t* dst;
  float* agg;
  CHECK_CUDA(cudaMalloc(&x, kEdges * kF4 * sizeof(float4)));
  CHECK_CUDA(cudaMemset(x, 0, kEdges * kF4 * sizeof(float4)));
  CHECK_CUDA(cudaMalloc(&dst, kEdges * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&agg, kOutRows * kF4 * sizeof(float4)));
  {
    std::vector<int32_t> h_dst(kEdges);
    std::mt19937 rng(2);
    for (auto& d : h_dst) d = static_cast<int32_t>(rng() % kOutRows);
    CHECK_CUDA(cudaMemcpy(dst, h_dst.data(), kEdges * sizeof(int32_t), cudaMemcpyHostToDevice));
  }
  // The DMA way's arguments: one 512-byte copy per row, built once (the trainer would build
  // them per batch on the host).
  const size_t n = ids.size();
  std::vector<void*> dsts(n);
  std::vector<const void*> srcs(n);
  std::vector<size_t> sizes(n, kRowBytes);
  for (size_t i = 0; i < n; ++i) {
    dsts[i] = reinterpret_cast<char*>(d_out) + i * kRowBytes;
    srcs[i] = static_cast<const char*>(host) + ids[i] * kRowBytes;
  }
  const auto batch_dma = [&](cudaStream_t st, bool hint) {
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.flags = hint ? cudaMemcpyFlagPreferOverlapWithCompute : 0;
    size_t idx = 0;
    CHECK_CUDA(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), n, &attr, &idx, 1, st));
  };
  struct Way {
    std::string name;
    std::function<void(cudaStream_t)> launch;
  };
  const int64_t rows = static_cast<int64_t>(n);
  const int full = static_cast<int>(std::min<int64_t>((rows + 7) / 8, 1 << 20));
  std::vector<Way> ways = {
      {"warp", [&](cudaStream_t st) { Gather<<<full, 256, 0, st>>>(d_ids, rows, table, d_out); }},
      {"warp_g" + std::to_string(2 * sms),
       [&](cudaStream_t st) { Gather<<<2 * sms, 256, 0, st>>>(d_ids, rows, table, d_out); }},
  };
  for (const int g : {sms / 4, sms / 2, sms, 2 * sms}) {
    ways.push_back({"ilp8_g" + std::to_string(g), [&, g](cudaStream_t st) {
                      GatherIlp<8><<<g, 256, 0, st>>>(d_ids, rows, table, d_out);
                    }});
  }
  ways.push_back({"ilp16_g" + std::to_string(sms / 2), [&](cudaStream_t st) {
                    GatherIlp<16><<<sms / 2, 256, 0, st>>>(d_ids, rows, table, d_out);
                  }});
  ways.push_back({"ilp8_g16x16", [&](cudaStream_t st) {
                    GatherIlp<8><<<16, 512, 0, st>>>(d_ids, rows, table, d_out);
                  }});
  const auto add_tma = [&](auto d_tag, int blocks, int wpb) {
    constexpr int D = decltype(d_tag)::value;
    const size_t smem = TmaSmem<D>(wpb);
    CHECK_CUDA(cudaFuncSetAttribute(GatherTma<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)));
    ways.push_back({"tma" + std::to_string(D) + "_g" + std::to_string(blocks) + "x" +
                        std::to_string(wpb),
                    [=](cudaStream_t st) {
                      GatherTma<D><<<blocks, 32 * wpb, smem, st>>>(d_ids, rows, table, d_out);
                    }});
  };
  using D2 = std::integral_constant<int, 2>;
  using D3 = std::integral_constant<int, 3>;
  using D4 = std::integral_constant<int, 4>;
  for (const int g : {8, 16, 33, 66, sms}) {
    add_tma(D2{}, g, 1);
    add_tma(D4{}, g, 1);
  }
  add_tma(D3{}, 16, 2);
  add_tma(D2{}, sms, 2);
  // The bulk copies' rows must equal the plain gather's.
  {
    const size_t out_bytes = n * kRowBytes;
    std::vector<char> want(out_bytes), got(out_bytes);
    Gather<<<full, 256>>>(d_ids, rows, table, d_out);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(want.data(), d_out, out_bytes, cudaMemcpyDeviceToHost));
    for (const Way& w : ways) {
      if (w.name.rfind("tma", 0) != 0) continue;
      CHECK_CUDA(cudaMemset(d_out, 0, out_bytes));
      w.launch(nullptr);
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemcpy(got.data(), d_out, out_bytes, cudaMemcpyDeviceToHost));
      std::printf("{\"name\": \"host_gather_tma_check\", \"way\": \"%s\", \"equal\": %s}\n",
                  w.name.c_str(), got == want ? "true" : "false");
    }
    std::fflush(stdout);
  }
  ways.push_back({"dma_batch", [&](cudaStream_t st) { batch_dma(st, false); }});
  ways.push_back({"dma_batch_overlap", [&](cudaStream_t st) { batch_dma(st, true); }});
  const int fma_iters = 4000;
  const std::vector<std::pair<std::string, std::function<void(cudaStream_t)>>> standins = {
      {"scatter",
       [&](cudaStream_t st) { ScatterAdd<<<2048, 256, 0, st>>>(x, dst, kEdges, kF4, agg); }},
      {"fma", [&](cudaStream_t st) { BusyFma<<<8 * sms, 256, 0, st>>>(agg, fma_iters); }},
  };
  const int reps = 4 * o.batches;
  const auto time = [&](const std::function<void()>& one) {
    one();  // warm-up
    CHECK_CUDA(cudaDeviceSynchronize());
    const double t = Seconds();
    for (int r = 0; r < reps; ++r) one();
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaGetLastError());
    return (Seconds() - t) / reps * 1e3;
  };
  const double batch_bytes = static_cast<double>(n) * kRowBytes;
  for (const auto& entry : standins) {
    const std::string& sname = entry.first;
    const auto& standin = entry.second;
    const double standin_ms = time([&] { standin(lo); });
    for (const Way& w : ways) {
      const double gather_ms = time([&] { w.launch(hi); });
      const double both_ms = time([&] {
        w.launch(hi);
        standin(lo);
      });
      std::printf(
          "{\"name\": \"host_gather_busy\", \"way\": \"%s\", \"standin\": \"%s\", "
          "\"gather_ms\": %.3f, \"gather_gbps\": %.2f, \"standin_ms\": %.3f, \"both_ms\": %.3f, "
          "\"extra_ms\": %.3f, \"dma_gbps\": %.2f, \"rows_per_batch\": %lld, \"table_gib\": "
          "%.1f}\n",
          w.name.c_str(), sname.c_str(), gather_ms, batch_bytes / (gather_ms * 1e-3) / 1e9,
          standin_ms, both_ms, both_ms - standin_ms, dma, static_cast<long long>(n), o.table_gib);
      std::fflush(stdout);
    }
  }
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(dst));
  CHECK_CUDA(cudaFree(agg));
  CHECK_CUDA(cudaStreamDestroy(hi));
  CHECK_CUDA(cudaStreamDestroy(lo));
  CHECK_CUDA(cudaFreeHost(host));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--table-gib") o.table_gib = std::atof(v);
    else if (k == "--rows-per-batch") o.rows_per_batch = std::atoll(v);
    else if (k == "--batches") o.batches = std::atoi(v);
    else if (k == "--file") o.file = v;
    else if (k == "--threads") o.threads = std::atoi(v);
    else if (k == "--cases") o.cases = v;
    else if (k == "--export-gib") o.export_gib = std::atof(v);
    else if (k == "--ipc-side-gib") o.ipc_side_gib = std::atof(v);
    else if (k == "--nccl-mode") o.nccl_mode = std::atoi(v);
    else if (k == "--fill-h2d") o.fill_h2d = std::atoi(v) != 0;
    else if (k == "--vmm") o.vmm = std::atoi(v) != 0;
    else if (k == "--sock-fd") o.sock_fd = std::atoi(v);
    else if (k == "--ids-files") o.ids_files = v;
    else if (k == "--share-rows") o.share_rows = std::atoll(v);
    else {
      std::fprintf(stderr, "host_gather_bench: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (o.export_gib > 0) return ExportChild(o);
  if (o.ipc_side_gib > 0) {
    const double ms = IpcSide(1, o.ipc_side_gib, o, 0, 1);
    std::printf("%.3f\n", ms);
    return 0;
  }
  if (!o.ids_files.empty()) {
    if (o.share_rows < 1 || o.batches < 1) {
      std::fprintf(stderr, "host_gather_bench: --ids-files needs --share-rows and --batches\n");
      return 2;
    }
    ShardedReplay(o);
    return 0;
  }
  if (o.table_gib <= 0 || o.rows_per_batch < 1 || o.batches < 1 || o.threads < 1) {
    std::fprintf(stderr, "host_gather_bench: --table-gib, --rows-per-batch, --batches and "
                         "--threads must be positive\n");
    return 2;
  }
  const size_t bytes = static_cast<size_t>(o.table_gib * (1ull << 30)) / (2u << 20) * (2u << 20);
  const int64_t rows = static_cast<int64_t>(bytes / kRowBytes);
  const size_t batch_bytes = static_cast<size_t>(o.rows_per_batch) * kRowBytes;

  std::vector<int64_t> ids(static_cast<size_t>(o.rows_per_batch));
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int64_t> pick(0, rows - 1);
  for (auto& id : ids) id = pick(rng);
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  int64_t* d_ids;
  uint4* d_out;
  CHECK_CUDA(cudaMalloc(&d_ids, ids.size() * sizeof(int64_t)));
  CHECK_CUDA(cudaMemcpy(d_ids, ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMalloc(&d_out, batch_bytes));

  // PCIe's own rate: DMA of one batch's bytes from pinned memory.
  void* staging;
  CHECK_CUDA(cudaHostAlloc(&staging, batch_bytes, cudaHostAllocDefault));
  std::memset(staging, 1, batch_bytes);
  CHECK_CUDA(cudaMemcpyAsync(d_out, staging, batch_bytes, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  double t = Seconds();
  for (int b = 0; b < o.batches; ++b)
    CHECK_CUDA(cudaMemcpyAsync(d_out, staging, batch_bytes, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  const double dma = static_cast<double>(batch_bytes) * o.batches / (Seconds() - t) / 1e9;
  Emit("dma", o, dma, dma, 0);

  // GPU memory, the device tier's rate (the table's size capped by the GPU's free memory).
  if (Want(o, "device")) {
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (bytes + (size_t{4} << 30) < free_b) {
      void* table;
      CHECK_CUDA(cudaMalloc(&table, bytes));
      CHECK_CUDA(cudaMemset(table, 1, bytes));
      Emit("device", o, TimeGather(static_cast<uint4*>(table), d_ids, d_out, o, s), dma, 0);
      CHECK_CUDA(cudaFree(table));
    }
  }

  // band: a cudaHostAlloc'd table of --table-gib where a share f of the reads falls in its first
  // B GiB (uniform there; the rest uniform over the whole table): whether rows packed in
  // hotness order (a host tier's hot band) read at a small table's rate beside the cold reads.
  if (Want(o, "band")) {
    void* host;
    CHECK_CUDA(cudaHostAlloc(&host, bytes, cudaHostAllocMapped));
    FillPages(static_cast<char*>(host), bytes, o.threads);
    void* dev;
    CHECK_CUDA(cudaHostGetDevicePointer(&dev, host, 0));
    std::vector<int64_t> band_ids(ids.size());
    for (const double band_gib : {0.5, 1.0, 2.0}) {
      const int64_t band_rows =
          std::min<int64_t>(rows, static_cast<int64_t>(band_gib * (1ull << 30)) / kRowBytes);
      std::uniform_int_distribution<int64_t> in_band(0, band_rows - 1);
      std::uniform_real_distribution<double> coin(0, 1);
      for (const double f : {0.0, 0.33, 0.5, 0.67, 0.9, 1.0}) {
        for (auto& id : band_ids) id = coin(rng) < f ? in_band(rng) : pick(rng);
        CHECK_CUDA(cudaMemcpy(d_ids, band_ids.data(), band_ids.size() * sizeof(int64_t),
                              cudaMemcpyHostToDevice));
        const double gbps = TimeGather(static_cast<uint4*>(dev), d_ids, d_out, o, s);
        std::printf("{\"name\": \"host_gather_band\", \"band_gib\": %.1f, \"band_share\": %.2f, "
                    "\"value\": %.2f, \"unit\": \"GB/s\", \"vs_dma\": %.3f, \"table_gib\": %.1f, "
                    "\"rows_per_batch\": %lld, \"row_bytes\": %lld}\n",
                    band_gib, f, gbps, gbps / dma, o.table_gib,
                    static_cast<long long>(o.rows_per_batch), static_cast<long long>(kRowBytes));
        std::fflush(stdout);
      }
    }
    CHECK_CUDA(cudaMemcpy(d_ids, ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaFreeHost(host));
  }

  // Another GPU's memory over NVLink / PCIe peer access: a table sharded across the host's GPUs.
  {
    int gpus = 0, can = 0;
    CHECK_CUDA(cudaGetDeviceCount(&gpus));
    if (gpus >= 2) CHECK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 1));
    size_t free_b = 0, total_b = 0;
    if (can) {
      CHECK_CUDA(cudaSetDevice(1));
      CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    }
    if (can && bytes + (size_t{4} << 30) < free_b && Want(o, "peer")) {
      void* table;
      CHECK_CUDA(cudaMalloc(&table, bytes));
      CHECK_CUDA(cudaMemset(table, 1, bytes));
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaSetDevice(0));
      CHECK_CUDA(cudaDeviceEnablePeerAccess(1, 0));
      Emit("peer", o, TimeGather(static_cast<uint4*>(table), d_ids, d_out, o, s), dma, 0);
      CHECK_CUDA(cudaDeviceDisablePeerAccess(1));
      CHECK_CUDA(cudaSetDevice(1));
      CHECK_CUDA(cudaFree(table));
    }
    CHECK_CUDA(cudaSetDevice(0));
    const bool fits = can && bytes + (size_t{4} << 30) < free_b;
    if (fits && Want(o, "sharded_ipc")) ShardedIpc(o, 0, false, false);
    if (fits && Want(o, "sharded_ipc_h2d")) ShardedIpc(o, 0, true, false);
    if (fits && Want(o, "sharded_vmm")) ShardedIpc(o, 0, false, true);
#ifdef HGB_NCCL
    if (fits && Want(o, "sharded_ipc_nccl")) {
      ShardedIpc(o, 1, false, false);
      ShardedIpc(o, 2, false, false);
      ShardedIpc(o, 1, true, false);
      ShardedIpc(o, 1, false, true);  // VMM shares with NCCL connected first
    }
#endif
    if (can && bytes + (size_t{4} << 30) < free_b && Want(o, "peer_ipc")) {
      pid_t child = -1;
      int to_child = -1;
      void* table = OpenExported(o.table_gib, &child, &to_child);
      if (table != nullptr) {
        Emit("peer_ipc", o, TimeGather(static_cast<uint4*>(table), d_ids, d_out, o, s), dma, 0);
        CHECK_CUDA(cudaIpcCloseMemHandle(table));
      }
      if (to_child >= 0) ::close(to_child);
      if (child > 0) ::waitpid(child, nullptr, 0);
    }
    if (can && 3 * bytes + (size_t{8} << 30) < free_b && Want(o, "sharded_pages")) {
      std::vector<int64_t> both(ids.size());
      std::uniform_int_distribution<int64_t> pick2(0, 2 * rows - 1);
      for (auto& id : both) id = pick2(rng);
      ShardedPages(o, bytes, rows, both);
    }
    const bool want_both = Want(o, "sharded_both"), want_busy = Want(o, "sharded_busy");
    if (can && 2 * bytes + (size_t{12} << 30) < free_b && (want_both || want_busy)) {
      // Each GPU a share of `bytes`; both gather batches of ids uniform over the two at once.
      void* share[2];
      uint64_t* d_shares[2];
      int64_t* ids2[2];
      uint4* out2[2];
      cudaStream_t st[2];
      std::vector<int64_t> both(ids.size());
      std::uniform_int_distribution<int64_t> pick2(0, 2 * rows - 1);
      for (auto& id : both) id = pick2(rng);
      for (int g = 0; g < 2; ++g) {
        CHECK_CUDA(cudaSetDevice(g));
        CHECK_CUDA(cudaMalloc(&share[g], bytes));
        CHECK_CUDA(cudaMemset(share[g], 1, bytes));
        CHECK_CUDA(cudaStreamCreate(&st[g]));
        CHECK_CUDA(cudaMalloc(&ids2[g], both.size() * sizeof(int64_t)));
        CHECK_CUDA(cudaMemcpy(ids2[g], both.data(), both.size() * sizeof(int64_t),
                              cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMalloc(&out2[g], batch_bytes));
        if (g == 1) CHECK_CUDA(cudaDeviceEnablePeerAccess(0, 0));
      }
      CHECK_CUDA(cudaSetDevice(0));
      CHECK_CUDA(cudaDeviceEnablePeerAccess(1, 0));
      const uint64_t where[2] = {reinterpret_cast<uint64_t>(share[0]),
                                 reinterpret_cast<uint64_t>(share[1])};
      for (int g = 0; g < 2; ++g) {
        CHECK_CUDA(cudaSetDevice(g));
        CHECK_CUDA(cudaMalloc(&d_shares[g], sizeof(where)));
        CHECK_CUDA(cudaMemcpy(d_shares[g], where, sizeof(where), cudaMemcpyHostToDevice));
      }
      const int blocks = static_cast<int>(std::min<int64_t>((o.rows_per_batch + 7) / 8, 1 << 20));
      double start = 0;
      for (int b = 0; b <= o.batches; ++b) {
        if (b == 1) start = Seconds();  // the first batch warms up
        for (int g = 0; g < 2; ++g) {
          CHECK_CUDA(cudaSetDevice(g));
          ShardedGather<<<blocks, 256, 0, st[g]>>>(ids2[g], o.rows_per_batch, d_shares[g],
                                                   static_cast<int64_t>(rows), out2[g]);
        }
        for (int g = 0; g < 2; ++g) {
          CHECK_CUDA(cudaSetDevice(g));
          CHECK_CUDA(cudaStreamSynchronize(st[g]));
        }
      }
      CHECK_CUDA(cudaGetLastError());
      const double gather_s = (Seconds() - start) / o.batches;
      if (want_both) Emit("sharded_both", o, static_cast<double>(batch_bytes) / gather_s / 1e9, dma, 0);
      if (want_busy) ShardedBusy(o, blocks, ids2, d_shares, rows, out2, gather_s);
      for (int g = 0; g < 2; ++g) {
        CHECK_CUDA(cudaSetDevice(g));
        CHECK_CUDA(cudaDeviceDisablePeerAccess(1 - g));
        CHECK_CUDA(cudaFree(share[g]));
        CHECK_CUDA(cudaFree(d_shares[g]));
        CHECK_CUDA(cudaFree(ids2[g]));
        CHECK_CUDA(cudaFree(out2[g]));
        CHECK_CUDA(cudaStreamDestroy(st[g]));
      }
      CHECK_CUDA(cudaSetDevice(0));
    }
  }

  const auto mapped = [&](const char* kind, void* host, double setup) {
    void* dev;
    CHECK_CUDA(cudaHostGetDevicePointer(&dev, host, 0));
    Emit(kind, o, TimeGather(static_cast<uint4*>(dev), d_ids, d_out, o, s), dma, setup);
  };
  if (Want(o, "host_busy")) HostBusy(o, ids, d_ids, d_out, bytes, dma);
  if (Want(o, "alloc")) {
    t = Seconds();
    void* host;
    CHECK_CUDA(cudaHostAlloc(&host, bytes, cudaHostAllocMapped));
    FillPages(static_cast<char*>(host), bytes, o.threads);
    mapped("alloc", host, Seconds() - t);
    CHECK_CUDA(cudaFreeHost(host));
  }
  for (const bool huge : {false, true}) {
    const bool want_mapped = Want(o, huge ? "anon_2m" : "anon_4k");
    const bool want_staged = !huge && Want(o, "staged");
    if (!want_mapped && !want_staged) continue;
    t = Seconds();
    void* host = std::aligned_alloc(2u << 20, bytes);
    if (host == nullptr) {
      std::fprintf(stderr, "host_gather_bench: cannot allocate %zu bytes\n", bytes);
      return 1;
    }
    madvise(host, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    FillPages(static_cast<char*>(host), bytes, o.threads);
    CHECK_CUDA(cudaHostRegister(host, bytes, cudaHostRegisterMapped));
    if (want_mapped) mapped(huge ? "anon_2m" : "anon_4k", host, Seconds() - t);

    if (want_staged) {
      // staged: CPU threads copy the rows into pinned memory, then one DMA per batch.
      t = Seconds();
      const char* table = static_cast<const char*>(host);
      for (int b = 0; b <= o.batches; ++b) {
        if (b == 1) t = Seconds();  // the first batch warms up
        std::vector<std::thread> pool;
        for (int th = 0; th < o.threads; ++th) {
          pool.emplace_back([&, th] {
            for (int64_t i = th; i < o.rows_per_batch; i += o.threads)
              std::memcpy(static_cast<char*>(staging) + i * kRowBytes, table + ids[i] * kRowBytes,
                          kRowBytes);
          });
        }
        for (auto& p : pool) p.join();
        CHECK_CUDA(cudaMemcpyAsync(d_out, staging, batch_bytes, cudaMemcpyHostToDevice, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
      }
      Emit("staged", o, static_cast<double>(batch_bytes) * o.batches / (Seconds() - t) / 1e9, dma,
           0);
    }
    CHECK_CUDA(cudaHostUnregister(host));
    std::free(host);
  }
  if (!o.file.empty() && Want(o, "file")) {
    t = Seconds();
    const int fd = ::open(o.file.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      std::fprintf(stderr, "host_gather_bench: cannot create %s (%s)\n", o.file.c_str(),
                   std::strerror(errno));
      return 1;
    }
    char* w = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (w == MAP_FAILED) {
      std::fprintf(stderr, "host_gather_bench: mmap %s: %s\n", o.file.c_str(), std::strerror(errno));
      return 1;
    }
    FillPages(w, bytes, o.threads);
    munmap(w, bytes);
    void* r = mmap(nullptr, bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (r == MAP_FAILED) {
      std::fprintf(stderr, "host_gather_bench: mmap %s: %s\n", o.file.c_str(), std::strerror(errno));
      return 1;
    }
    CHECK_CUDA(cudaHostRegister(r, bytes, cudaHostRegisterMapped | cudaHostRegisterReadOnly));
    mapped("file", r, Seconds() - t);
    CHECK_CUDA(cudaHostUnregister(r));
    munmap(r, bytes);
    ::close(fd);
    ::unlink(o.file.c_str());
  }
  return 0;
}
