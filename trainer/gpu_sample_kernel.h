#ifndef GRAPHSHARD_TRAINER_GPU_SAMPLE_KERNEL_H_
#define GRAPHSHARD_TRAINER_GPU_SAMPLE_KERNEL_H_

// The CUDA kernels of the trainer's GPU sampler (gpu_sampler.h): one hop's draws over a CSC in
// GPU memory, drawn exactly as a server draws them (server/engine/local_part.cc, SampleItem:
// node v's picks from SplitMix64(MixSeed(item seed, v)), Floyd's algorithm without
// replacement, every neighbour in CSC order when the fanout covers them), and the relabelling
// of the sampled sources into the batch's rows in order of first meeting (as NodeIndex does on
// a server: the lowest edge position wins, so the rows come out in the server's order).
//
// The sizes of a batch (each hop's frontier, edges, new rows) stay on the GPU (HopSizes): the
// host queues every hop with arrays sized to an upper bound (the frontier's bound times the
// fanout) and each kernel reads the true count from GPU memory and leaves the rest alone, so
// a batch needs one wait for the host, at its end, not two per hop.
//
// Built from gpu_sample_kernel.cu where CMake finds a CUDA compiler, else
// gpu_sample_kernel_none.cc (then --sampler gpu says so). No Torch and no CUDA headers here.
// Ids are trusted: the topology was checked when it was read (client/graph_topology.h), the
// seeds are the trainer's own.

#include <cstdint>
#include <string>

namespace graphshard::trainer {

// One hop's sizes in GPU memory (int64 each). nodes[0]: the hop's frontier; rows[0]: the batch
// rows before the hop's new sources (the frontier is rows rows[0] - nodes[0] ..); edges[0]: the
// edges the hop samples (written by LaunchHopEdges); nodes[1] and rows[1]: the hop's new
// sources and the rows after them (written by LaunchAssign): the next hop's nodes[0], rows[0].
struct HopSizes {
  int64_t* nodes = nullptr;
  int64_t* edges = nullptr;
  int64_t* rows = nullptr;
};

struct SampleHopArgs {
  // In GPU memory, or in page-locked host memory mapped for the GPU (gpu_sampler.h, GpuGraph).
  const int64_t* indptr = nullptr;    // [num_nodes + 1]
  const int32_t* indices = nullptr;   // [num_edges]: in-neighbours (global ids < 2^31)
  const int64_t* frontier = nullptr;  // [capacity]: global ids of the hop's frontier
  int64_t capacity = 0;               // a bound of the frontier's size (sizes.nodes[0])
  int32_t fanout = -1;
  bool replace = false;
  uint64_t item_seed = 0;  // common::HopItemSeed of the batch, hop and edge type
  HopSizes sizes;
  // [capacity]: where each frontier node's picks end (an inclusive scan of LaunchHopCounts'
  // counts): all in-edges for fanout -1 or when the fanout covers them, else the fanout; with
  // replacement the fanout if it has any.
  const int64_t* ends = nullptr;
  int64_t* out_src = nullptr;  // [sizes.edges[0]]: picked sources (global ids)
  int64_t* out_dst = nullptr;  // [sizes.edges[0]]: their destinations' batch rows
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
// has no kernels or a launch fails. `capacity`: the arrays' length, a bound of the count in
// GPU memory that the kernel honours.
//
// One hop, in order: HopCounts writes counts[i] (the picks of frontier node i; 0 past the
// frontier); the caller scans them into args.ends; HopEdges writes sizes.edges[0]; SampleHop
// draws (out_src and out_dst hold `edge_capacity` entries, a bound of sizes.edges[0]).
bool LaunchHopCounts(const SampleHopArgs& args, int64_t* counts, void* stream, std::string* error);
bool LaunchHopEdges(const SampleHopArgs& args, void* stream, std::string* error);
bool LaunchSampleHop(const SampleHopArgs& args, int64_t edge_capacity, void* stream,
                     std::string* error);
// row_of[ids[i]] = first_row + i (first_row >= 0), or -1 for all when first_row < 0; n is
// exact (host-known).
bool LaunchSetRows(RelabelTables tables, const int64_t* ids, int64_t n, int64_t first_row,
                   void* stream, std::string* error);
// row_of[ids[i]] = -1 for i < *count (a count in GPU memory, within `capacity`).
bool LaunchClearRows(RelabelTables tables, const int64_t* ids, int64_t capacity,
                     const int64_t* count, void* stream, std::string* error);
// Relabelling one hop's sources `src` (sizes.edges[0] of them, within `capacity`), in four
// launches around a scan the caller makes: MarkFirst records, for each source not yet in the
// batch, its first edge; FlagNew sets is_new[e] = 1 where edge e is its source's first (else 0,
// also past the edges); after the caller's inclusive scan of is_new into `position` (int64),
// Assign gives each new source row rows[0] + position[e] - 1, writes it to
// new_ids[position[e] - 1], resets its first_edge, and writes sizes.nodes[1] and rows[1];
// Rows writes every edge's source row into `rows`.
bool LaunchMarkFirst(RelabelTables tables, const int64_t* src, int64_t capacity, HopSizes sizes,
                     void* stream, std::string* error);
bool LaunchFlagNew(RelabelTables tables, const int64_t* src, int64_t capacity, HopSizes sizes,
                   int32_t* is_new, void* stream, std::string* error);
bool LaunchAssign(RelabelTables tables, const int64_t* src, int64_t capacity, HopSizes sizes,
                  const int32_t* is_new, const int64_t* position, int64_t* new_ids, void* stream,
                  std::string* error);
bool LaunchRows(RelabelTables tables, const int64_t* src, int64_t capacity, HopSizes sizes,
                int64_t* rows, void* stream, std::string* error);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_GPU_SAMPLE_KERNEL_H_
