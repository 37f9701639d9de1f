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
// id / share rows picks the share), GB/s per GPU.
// Rows are 512 bytes (128 float32, as the papers-shaped graph's) and the ids uniform over the
// table; each case gathers --batches batches after one warm-up batch. Prints one JSON line per
// case: GB/s of rows and its ratio to the DMA of the same bytes.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kRowBytes = 512;
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

struct Options {
  std::string cases;  // comma-separated; empty: every case
  double export_gib = 0;  // > 0: the --export-gib child (peer_ipc)
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
    else {
      std::fprintf(stderr, "host_gather_bench: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (o.export_gib > 0) return ExportChild(o);
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
    if (can && 2 * bytes + (size_t{8} << 30) < free_b && Want(o, "sharded_both")) {
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
      Emit("sharded_both", o,
           static_cast<double>(batch_bytes) * o.batches / (Seconds() - start) / 1e9, dma, 0);
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
