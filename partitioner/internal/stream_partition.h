#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_STREAM_PARTITION_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_STREAM_PARTITION_H_

// Restreaming linear deterministic greedy (LDG) partitioning over the edge list: a
// locality-preserving method with memory O(nodes x parts), never O(edges), and no 32-bit limit.
//
// Works on the homogeneous view, as METIS does: all node types, all relations, a node's
// neighbours being its in- and out-neighbours (self loops ignored; a repeated edge counts once
// per occurrence). Each pass is
//   1. a parallel scan of every edge type's edges counting, for every node v and part p, the
//      neighbours of v that the current assignment puts in p (count[v][p]: uint32, saturating);
//   2. a sequential walk over all nodes (types concatenated) in a fixed strided order that
//      interleaves id ranges, assigning v to the part maximising
//      count[v][p] * (1 - load[p] / capacity) (Stanton & Kliot's LDG), where load[p] counts the
//      nodes already assigned in this pass (loads restart at 0 every pass: Nishimura &
//      Ugander's restreaming). Ties go to the least-loaded part, then the lowest index; a node
//      with no neighbours thus goes to the least-loaded part. One node in four, drawn from
//      (seed, pass, node), keeps its part instead while its class has room there (without it
//      neighbours swap parts in lockstep, the counts being those from before the pass).
// The passes end early after one that moves at most 0.1% of the nodes.
// Hard caps: every class of nodes (node type x in that type's "train" split or not) has at most
// ceil(21/20 x class size / K) nodes in each part, so training nodes and the nodes of each type
// are balanced within 5% (plus one node), and all nodes within 5% plus one node per class. A
// part with room for the class always exists, so the caps never fail. `capacity` is the sum of
// the class caps (a part's most possible nodes), keeping the penalty non-negative.
//
// Deterministic: the counts are integers summed in any order, the walk is sequential; the result
// depends on (graph, initial parts, options) and never on the thread count.
// Memory: 4 x K bytes per node (the counts) + the caller's parts (4 bytes per node) + 1 bit per
// node (train flags); the edge arrays are scanned, never copied (mmap'ed pages are dropped
// behind each chunk).

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "partitioner/graph.h"
#include "partitioner/internal/progress.h"
#include "partitioner/partition.h"

namespace graphshard::partitioner::internal {

struct StreamOptions {
  int num_parts = 2;                  // >= 2
  int passes = kDefaultStreamPasses;  // >= 1: at most this many
  uint64_t seed = 0;                  // draws which nodes keep their part in each pass
  int threads = 1;                    // >= 1: workers of the edge scans
  ProgressSink progress = {};         // progress lines (log nullptr = silent)
};

// Refines `parts` ([node type][node] -> part in [0, num_parts), sized as the graph's types; the
// random method's assignment, say) in place with `passes` passes. `graph` must have passed
// ValidateGraph. InvalidArgument if the options are out of range, `parts` does not match the
// graph, or nodes x parts overflows the count array's size.
absl::Status StreamPartition(const Graph& graph, const StreamOptions& options,
                             std::vector<std::vector<int>>& parts);

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_STREAM_PARTITION_H_
