#include <cuda_runtime.h>

#include <algorithm>

#include "trainer/tiered_gather.h"

namespace graphshard::trainer {
namespace {

constexpr int kWarpsPerBlock = 8;

// The tiered gather runs beside the training step, on few SMs: a block of kGatherWarps warps
// for every eighth SM (16 on an H100 or H200), each warp with kRowsInFlight rows' reads in
// flight (a host row takes microseconds to come over PCIe). A grid of a warp per row took every
// SM, and the step's next kernel waited for it; on 16 SMs host rows still come at the rate of
// PCIe, and the step keeps the other SMs (tests/bench/RESULTS.md, "The gather beside the
// step": 8 or 4 blocks of 8 warps were slower, 16-66 blocks about even).
constexpr int kGatherWarps = 16;
constexpr int kRowsInFlight = 8;
constexpr int kSmsPerGatherBlock = 8;

// Positions of a batch that `ReusedBatches::last` can name (24 bits).
constexpr int64_t kReusablePositions = int64_t{1} << 24;

// A warp per kRowsInFlight consecutive rows: the rows' addresses first, then the rows' words
// copied by the warp's lanes (consecutive lanes, consecutive words: coalesced reads, over PCIe
// for host rows), every row's loads issued before its stores. A host row that a batch of
// `reuse` holds (its ids at the recorded position match) is read from that batch's rows in
// device memory instead; lane 0 then records where this batch holds it. With `reuse.found`,
// remote rows too: one found is copied and marked, the others are left for the caller.
template <typename Word>
__global__ void TieredGatherKernel(const int64_t* ids, int64_t n, const int32_t* code,
                                   const Word* device_rows, const Word* host_rows, Word* out,
                                   int64_t words, ReusedBatches reuse) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  unsigned long long reused = 0;
  for (int64_t first = warp * kRowsInFlight; first < n; first += warps * kRowsInFlight) {
    const Word* src[kRowsInFlight];
    int64_t seen_id[kRowsInFlight];
#pragma unroll
    for (int r = 0; r < kRowsInFlight; ++r) {
      src[r] = nullptr;  // past the end, or remote and not found: the caller fills it
      seen_id[r] = -1;
      if (first + r >= n) continue;
      const int64_t id = ids[first + r];
      const int32_t c = code[id];
      if (c >= 0) {
        src[r] = device_rows + static_cast<int64_t>(c) * words;
      } else {
        const bool host = c <= -2;
        if (host) src[r] = host_rows + (-2 - static_cast<int64_t>(c)) * words;
        if (reuse.last == nullptr || (!host && reuse.found == nullptr)) continue;
        seen_id[r] = id;  // recorded below, host or remote
        const int32_t at = reuse.last[id];
        if (at < 0) continue;
        const int s = at >> 24;
        const int64_t p = at & (kReusablePositions - 1);
        if (reuse.ids[s] != nullptr && p < reuse.n[s] && reuse.ids[s][p] == id) {
          src[r] = static_cast<const Word*>(reuse.rows[s]) + p * words;
          if (lane == 0) {
            if (host) {
              ++reused;
            } else {
              reuse.found[first + r] = 1;
            }
          }
        }
      }
    }
    if (reuse.last != nullptr) {
      __syncwarp();  // every lane has read `last` before lane 0 writes it
      if (lane == 0) {
#pragma unroll
        for (int r = 0; r < kRowsInFlight; ++r) {
          if (seen_id[r] >= 0 && first + r < kReusablePositions) {
            reuse.last[seen_id[r]] = (reuse.slot << 24) | static_cast<int32_t>(first + r);
          }
        }
      }
    }
    for (int64_t w = lane; w < words; w += 32) {
      Word v[kRowsInFlight];
#pragma unroll
      for (int r = 0; r < kRowsInFlight; ++r) {
        if (src[r] != nullptr) v[r] = src[r][w];
      }
#pragma unroll
      for (int r = 0; r < kRowsInFlight; ++r) {
        if (src[r] != nullptr) out[(first + r) * words + w] = v[r];
      }
    }
  }
  if (reused > 0 && reuse.reused != nullptr) atomicAdd(reuse.reused, reused);
}

// One warp per row, as above; the row's shard by its id.
template <typename Word>
__global__ void ShardedGatherKernel(const int64_t* ids, int64_t n, const uint64_t* shards,
                                    int64_t shard_rows, Word* out, int64_t words) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t i = warp; i < n; i += warps) {
    const int64_t id = ids[i];
    const Word* src =
        reinterpret_cast<const Word*>(shards[id / shard_rows]) + (id % shard_rows) * words;
    Word* dst = out + i * words;
    for (int64_t w = lane; w < words; w += 32) dst[w] = src[w];
  }
}

unsigned Blocks(int64_t n) {
  const int64_t blocks64 = (n + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<unsigned>(std::min<int64_t>(blocks64, 1 << 20));
}

template <typename Word>
cudaError_t LaunchSharded(const ShardedGatherArgs& a, cudaStream_t stream) {
  ShardedGatherKernel<Word><<<Blocks(a.n), kWarpsPerBlock * 32, 0, stream>>>(
      a.ids, a.n, a.shares, a.share_rows, static_cast<Word*>(a.out),
      a.row_bytes / static_cast<int64_t>(sizeof(Word)));
  return cudaGetLastError();
}

// The tiered gather's grid (see kGatherWarps): no more blocks than the rows need.
unsigned GatherBlocks(int64_t n) {
  int device = 0;
  int sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    cudaGetLastError();  // clear it: the launch then uses a fixed grid
    sms = 128;
  }
  const int64_t rows_per_block = int64_t{kGatherWarps} * kRowsInFlight;
  const int64_t needed = (n + rows_per_block - 1) / rows_per_block;
  return static_cast<unsigned>(
      std::clamp<int64_t>(needed, 1, std::max(1, sms / kSmsPerGatherBlock)));
}

template <typename Word>
cudaError_t Launch(const TieredGatherArgs& a, cudaStream_t stream) {
  TieredGatherKernel<Word><<<GatherBlocks(a.n), kGatherWarps * 32, 0, stream>>>(
      a.ids, a.n, a.code, static_cast<const Word*>(a.device_rows),
      static_cast<const Word*>(a.host_rows), static_cast<Word*>(a.out),
      a.row_bytes / static_cast<int64_t>(sizeof(Word)), a.reuse);
  return cudaGetLastError();
}

bool Aligned(const void* p, size_t to) { return reinterpret_cast<uintptr_t>(p) % to == 0; }

}  // namespace

bool LaunchShardedGather(const ShardedGatherArgs& a, void* stream, std::string* error) {
  if (a.n == 0) return true;
  if (a.share_rows <= 0) {
    *error = "shared device tier: no rows per shard";
    return false;
  }
  const auto s = static_cast<cudaStream_t>(stream);
  // Shards are whole cudaMalloc allocations (256-byte aligned): the row size picks the word.
  const cudaError_t err = a.row_bytes % 16 == 0 && Aligned(a.out, 16) ? LaunchSharded<uint4>(a, s)
                          : a.row_bytes % 8 == 0 && Aligned(a.out, 8) ? LaunchSharded<uint2>(a, s)
                          : a.row_bytes % 4 == 0 && Aligned(a.out, 4)
                              ? LaunchSharded<uint32_t>(a, s)
                              : LaunchSharded<uint16_t>(a, s);
  if (err != cudaSuccess) {
    *error = std::string("shared device tier gather kernel: ") + cudaGetErrorString(err);
    return false;
  }
  return true;
}

bool LaunchTieredGather(const TieredGatherArgs& a, void* stream, std::string* error) {
  if (a.n == 0) return true;
  const auto s = static_cast<cudaStream_t>(stream);
  // The widest word that divides a row and every base address.
  const auto fits = [&a](size_t w) {
    bool ok = a.row_bytes % static_cast<int64_t>(w) == 0 && Aligned(a.device_rows, w) &&
              Aligned(a.host_rows, w) && Aligned(a.out, w);
    for (const void* rows : a.reuse.rows) ok = ok && Aligned(rows, w);
    return ok;
  };
  cudaError_t err;
  if (fits(16)) {
    err = Launch<uint4>(a, s);
  } else if (fits(8)) {
    err = Launch<uint2>(a, s);
  } else if (fits(4)) {
    err = Launch<uint32_t>(a, s);
  } else {
    err = Launch<uint16_t>(a, s);
  }
  if (err != cudaSuccess) {
    *error = std::string("tiered gather kernel: ") + cudaGetErrorString(err);
    return false;
  }
  return true;
}

}  // namespace graphshard::trainer
