#ifndef GRAPHSHARD_TRAINER_GPU_SAMPLE_KERNEL_H_
#define GRAPHSHARD_TRAINER_GPU_SAMPLE_KERNEL_H_

// The CUDA kernels of the trainer's GPU sampler (gpu_sampler.h): one hop's draws over a CSC in
// GPU memory, drawn exactly as a server draws them (server/engine/local_part.cc, SampleItem:
// node v's picks from SplitMix64(MixSeed(item seed, v)), Floyd's algorithm without
// replacement, every neighbour in CSC order when the fanout covers them), and the relabelling
// of the sampled sources into the batch's rows in order of first meeting (as NodeIndex does on
// a server: the lowest edge position wins, so the rows come out in the server's order).
// Built from gpu_sample_kernel.cu where CMake finds a CUDA compiler, else
// gpu_sample_kernel_none.cc (then --sampler gpu says so). No Torch and no CUDA headers here.
// Ids are trusted: the topology was checked when it was read (client/graph_topology.h), the
// seeds are the trainer's own.

#include <cstdint>
#include <string>

namespace graphshard::trainer {

struct SampleHopArgs {
  const int64_t* indptr = nullptr;    // [num_nodes + 1]
  const int32_t* indices = nullptr;   // [num_edges]: in-neighbours (global ids < 2^31)
  const int64_t* frontier = nullptr;  // [n]: global ids of the hop's frontier
  const int64_t* offsets = nullptr;   // [n + 1]: where each frontier node's picks go (their
                                      // counts: all in-edges for fanout -1 or when the fanout
                                      // covers them, else the fanout; with replacement the
                                      // fanout if it has any)
  int64_t n = 0;
  int64_t frontier_begin = 0;  // the batch row of frontier[0]; frontier[i] is row begin + i
  int32_t fanout = -1;
  bool replace = false;
  uint64_t item_seed = 0;  // common::HopItemSeed of the batch, hop and edge type
  int64_t* out_src = nullptr;  // [offsets[n]]: picked sources (global ids)
  int64_t* out_dst = nullptr;  // [offsets[n]]: their destinations' batch rows
};

// The relabelling tables: row_of[v] (int32, -1 = not in the batch) and first_edge[v] (int32,
// INT32_MAX = none), one each per node of the graph, kept between batches (each batch clears
// what it set).
struct RelabelTables {
  int32_t* row_of = nullptr;
  int32_t* first_edge = nullptr;
};

// Whether this build has the kernels (a CUDA compiler was found).
bool GpuSampleKernelsBuilt();

// Each queues on CUDA stream `stream` (a cudaStream_t); false, with the reason, when this build
// has no kernels or a launch fails.
bool LaunchSampleHop(const SampleHopArgs& args, void* stream, std::string* error);
// row_of[ids[i]] = first_row + i (first_row >= 0), or -1 for all when first_row < 0.
bool LaunchSetRows(RelabelTables tables, const int64_t* ids, int64_t n, int64_t first_row,
                   void* stream, std::string* error);
// Relabelling one hop's `num_edges` sources `src`, in three launches around a scan the caller
// makes: MarkFirst records, for each source not yet in the batch, its first edge; FlagNew sets
// is_new[e] = 1 where edge e is its source's first (else 0); after the caller's inclusive scan
// of is_new into `position` (int64), Assign gives each new source row first_row +
// position[e] - 1, writes it to new_ids[position[e] - 1] and resets its first_edge; Rows
// writes every edge's source row into `rows`.
bool LaunchMarkFirst(RelabelTables tables, const int64_t* src, int64_t num_edges, void* stream,
                     std::string* error);
bool LaunchFlagNew(RelabelTables tables, const int64_t* src, int64_t num_edges, int32_t* is_new,
                   void* stream, std::string* error);
bool LaunchAssign(RelabelTables tables, const int64_t* src, int64_t num_edges,
                  const int32_t* is_new, const int64_t* position, int64_t first_row,
                  int64_t* new_ids, void* stream, std::string* error);
bool LaunchRows(RelabelTables tables, const int64_t* src, int64_t num_edges, int64_t* rows,
                void* stream, std::string* error);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_GPU_SAMPLE_KERNEL_H_
