#include <cuda_runtime.h>

#include <climits>

#include "common/batch_order.h"
#include "common/rng.h"
#include "trainer/gpu_sample_kernel.h"

namespace graphshard::trainer {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

bool Launched(const char* what, std::string* error) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return true;
  *error = std::string(what) + ": " + cudaGetErrorString(e);
  return false;
}

// The picks of frontier node i (0 past the frontier).
__global__ void HopCountsKernel(SampleHopArgs a, int64_t* counts) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= a.capacity) return;
  if (i >= *a.sizes.nodes) {
    counts[i] = 0;
    return;
  }
  const int64_t v = a.frontier[i];
  const int64_t deg = a.indptr[v + 1] - a.indptr[v];
  const int64_t k = a.fanout;
  counts[i] = k < 0 ? deg : a.replace ? (deg > 0 ? k : 0) : (deg < k ? deg : k);
}

__global__ void HopEdgesKernel(SampleHopArgs a) {
  const int64_t n = *a.sizes.nodes;
  *a.sizes.edges = n > 0 ? a.ends[n - 1] : 0;
}

// One thread per frontier node: its picks, as positions in its in-edge list (Floyd's algorithm
// checks the positions drawn before it), written as positions in `indices` (GatherSources turns
// them into source ids, one thread per edge).
__global__ void SampleHopKernel(SampleHopArgs a) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= a.capacity || i >= *a.sizes.nodes) return;
  const int64_t v = a.frontier[i];
  const int64_t first = a.indptr[v];
  const int64_t deg = a.indptr[v + 1] - first;
  const int64_t base = i == 0 ? 0 : a.ends[i - 1];
  const int64_t count = a.ends[i] - base;
  int64_t* out = a.out_src + base;
  const int64_t k = a.fanout;
  if (k < 0 || (!a.replace && deg <= k)) {
    for (int64_t p = 0; p < count; ++p) out[p] = p;
  } else {
    common::SplitMix64 rng(common::MixSeed(a.item_seed, static_cast<uint64_t>(v)));
    if (a.replace) {
      for (int64_t j = 0; j < count; ++j) {
        out[j] = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(deg)));
      }
    } else {
      int64_t drawn = 0;
      for (int64_t j = deg - k; j < deg; ++j) {
        const int64_t t = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(j + 1)));
        bool seen = false;
        for (int64_t q = 0; q < drawn && !seen; ++q) seen = out[q] == t;
        out[drawn++] = seen ? j : t;
      }
    }
  }
  const int64_t row = *a.sizes.rows - *a.sizes.nodes + i;
  for (int64_t p = 0; p < count; ++p) {
    out[p] += first;
    a.out_dst[base + p] = row;
  }
}

// One thread per sampled edge: its position in `indices` becomes its source id. Each thread
// makes one independent read, so that many are in flight at once: with the topology in host
// memory each is a read over PCIe, and a thread reading its node's picks one after the other
// waited for each (measured: tests/bench/RESULTS.md, "The topology in host memory").
__global__ void GatherSourcesKernel(SampleHopArgs a, int64_t edge_capacity) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= edge_capacity || e >= *a.sizes.edges) return;
  a.out_src[e] = a.indices[a.out_src[e]];
}

__global__ void SetRowsKernel(RelabelTables t, const int64_t* ids, int64_t n, int64_t first_row) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  t.row_of[ids[i]] = first_row < 0 ? -1 : static_cast<int32_t>(first_row + i);
}

__global__ void ClearRowsKernel(RelabelTables t, const int64_t* ids, int64_t capacity,
                                const int64_t* count) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= capacity || i >= *count) return;
  t.row_of[ids[i]] = -1;
}

__global__ void MarkFirstKernel(RelabelTables t, const int64_t* src, int64_t capacity, HopSizes s) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= capacity || e >= *s.edges) return;
  const int64_t v = src[e];
  if (t.row_of[v] < 0) atomicMin(t.first_edge + v, static_cast<int32_t>(e));
}

__global__ void FlagNewKernel(RelabelTables t, const int64_t* src, int64_t capacity, HopSizes s,
                              int32_t* is_new) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= capacity) return;
  if (e >= *s.edges) {
    is_new[e] = 0;
    return;
  }
  const int64_t v = src[e];
  is_new[e] = t.row_of[v] < 0 && t.first_edge[v] == static_cast<int32_t>(e) ? 1 : 0;
}

// Thread 0 also writes the hop's new sources and the rows after them (launched with at least
// one thread, whatever the capacity).
__global__ void AssignKernel(RelabelTables t, const int64_t* src, int64_t capacity, HopSizes s,
                             const int32_t* is_new, const int64_t* position, int64_t* new_ids) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t edges = *s.edges;
  if (e == 0) {
    const int64_t added = edges > 0 ? position[edges - 1] : 0;
    s.nodes[1] = added;
    s.rows[1] = s.rows[0] + added;
  }
  if (e >= capacity || e >= edges || is_new[e] == 0) return;
  const int64_t v = src[e];
  const int64_t k = position[e] - 1;
  t.row_of[v] = static_cast<int32_t>(s.rows[0] + k);
  t.first_edge[v] = INT_MAX;
  new_ids[k] = v;
}

__global__ void RowsKernel(RelabelTables t, const int64_t* src, int64_t capacity, HopSizes s,
                           int64_t* rows) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= capacity || e >= *s.edges) return;
  rows[e] = t.row_of[src[e]];
}

cudaStream_t StreamOf(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

bool GpuSampleKernelsBuilt() { return true; }

bool LaunchHopCounts(const SampleHopArgs& args, int64_t* counts, void* stream, std::string* error) {
  if (args.capacity == 0) return true;
  HopCountsKernel<<<Blocks(args.capacity), kThreads, 0, StreamOf(stream)>>>(args, counts);
  return Launched("counting a hop's picks on the GPU", error);
}

bool LaunchHopEdges(const SampleHopArgs& args, void* stream, std::string* error) {
  HopEdgesKernel<<<1, 1, 0, StreamOf(stream)>>>(args);
  return Launched("summing a hop's picks on the GPU", error);
}

bool LaunchSampleHop(const SampleHopArgs& args, int64_t edge_capacity, void* stream,
                     std::string* error) {
  if (args.capacity == 0) return true;
  SampleHopKernel<<<Blocks(args.capacity), kThreads, 0, StreamOf(stream)>>>(args);
  if (!Launched("sampling a hop on the GPU", error)) return false;
  if (edge_capacity == 0) return true;
  GatherSourcesKernel<<<Blocks(edge_capacity), kThreads, 0, StreamOf(stream)>>>(args,
                                                                                edge_capacity);
  return Launched("reading a hop's sources on the GPU", error);
}

bool LaunchSetRows(RelabelTables tables, const int64_t* ids, int64_t n, int64_t first_row,
                   void* stream, std::string* error) {
  if (n == 0) return true;
  SetRowsKernel<<<Blocks(n), kThreads, 0, StreamOf(stream)>>>(tables, ids, n, first_row);
  return Launched("setting batch rows on the GPU", error);
}

bool LaunchClearRows(RelabelTables tables, const int64_t* ids, int64_t capacity,
                     const int64_t* count, void* stream, std::string* error) {
  if (capacity == 0) return true;
  ClearRowsKernel<<<Blocks(capacity), kThreads, 0, StreamOf(stream)>>>(tables, ids, capacity,
                                                                       count);
  return Launched("clearing batch rows on the GPU", error);
}

bool LaunchMarkFirst(RelabelTables tables, const int64_t* src, int64_t capacity, HopSizes sizes,
                     void* stream, std::string* error) {
  if (capacity == 0) return true;
  MarkFirstKernel<<<Blocks(capacity), kThreads, 0, StreamOf(stream)>>>(tables, src, capacity,
                                                                       sizes);
  return Launched("relabelling on the GPU (first edges)", error);
}

bool LaunchFlagNew(RelabelTables tables, const int64_t* src, int64_t capacity, HopSizes sizes,
                   int32_t* is_new, void* stream, std::string* error) {
  if (capacity == 0) return true;
  FlagNewKernel<<<Blocks(capacity), kThreads, 0, StreamOf(stream)>>>(tables, src, capacity, sizes,
                                                                     is_new);
  return Launched("relabelling on the GPU (new sources)", error);
}

bool LaunchAssign(RelabelTables tables, const int64_t* src, int64_t capacity, HopSizes sizes,
                  const int32_t* is_new, const int64_t* position, int64_t* new_ids, void* stream,
                  std::string* error) {
  // At least one block: its thread 0 writes the hop's sizes.
  AssignKernel<<<Blocks(capacity > 0 ? capacity : 1), kThreads, 0, StreamOf(stream)>>>(
      tables, src, capacity, sizes, is_new, position, new_ids);
  return Launched("relabelling on the GPU (new rows)", error);
}

bool LaunchRows(RelabelTables tables, const int64_t* src, int64_t capacity, HopSizes sizes,
                int64_t* rows, void* stream, std::string* error) {
  if (capacity == 0) return true;
  RowsKernel<<<Blocks(capacity), kThreads, 0, StreamOf(stream)>>>(tables, src, capacity, sizes,
                                                                  rows);
  return Launched("relabelling on the GPU (edge rows)", error);
}

}  // namespace graphshard::trainer
