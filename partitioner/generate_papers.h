#ifndef GRAPHSHARD_PARTITIONER_GENERATE_PAPERS_H_
#define GRAPHSHARD_PARTITIONER_GENERATE_PAPERS_H_

// An ogbn-papers100M-shaped citation graph, written straight to the npy input layout
// (read_input.h) with memory bounded by the node count: nothing of edge size is ever held.
//
// At scale 1: 111,059,956 papers, about 1.6 B citations (both directions stored: 3.2 B
// directed edges in edge_index.npy), 128 float32 features, 172 classes, about 1.21 M training,
// 125 k validation and 214 k test papers (ogbn-papers100M's split sizes); the rest unlabelled
// (label -1), as in OGB. Every size but the feature width and class count scales with `scale`.
//
// The model, per paper u (ids are publication order: a paper cites only older ones):
//   - a class (uniform over 172) and a popularity weight w = U^-0.5 (U uniform in (0, 1]: the
//     same law as products' rank^-0.5, a power-law in-degree tail of exponent about 3, drawn per
//     node so that no shuffle of all nodes is needed);
//   - a number of citations d, log-normal with mean 14.55 (ogbn-papers100M's 1.6 B / 111 M),
//     at most u and at most 5,000; each cites, without repeats, an older paper of its own class
//     with probability 0.8 (by popularity among those), else any older paper by popularity;
//   - features: its class centroid (N(0, 1) per dimension) + N(0, 64) noise, so own features
//     separate 172 classes weakly and averaging over neighbours (80% same class) much better;
//   - split role: train / val / test with papers100M's proportions, drawn per node.
// Every draw comes from a generator seeded by (seed, purpose, node), and floating sums are taken
// over fixed chunks, so the output is byte-identical for any thread count.
//
// Files: edge_index.npy int64 [2, 2M] (citation k < M is u -> v, k + M its reverse), x.npy
// float32 [N, 128], y.npy int64 [N], {train,val,test}_idx.npy int64 (ascending). Written with
// pwrite from `threads` workers into a temporary folder renamed at the end (atomic_dir.h).

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"

namespace graphshard::partitioner {

inline constexpr int64_t kPapersFullNodes = 111'059'956;
inline constexpr int kPapersFeatures = 128;
inline constexpr int kPapersClasses = 172;

struct PapersOptions {
  uint64_t seed = 0;
  double scale = 0.01;    // nodes = round(kPapersFullNodes * scale)
  int64_t num_nodes = 0;  // > 0: this many nodes instead (tests)
  int threads = 0;        // 0 = the machine's hardware threads
  bool replace = false;   // replace an existing output folder
  std::ostream* log = nullptr;  // one line per step with its time; nullptr = silent
};

// What was written, for the CLI's summary and the shape tests.
struct PapersStats {
  int64_t num_nodes = 0;
  int64_t citations = 0;  // undirected edges; edge_index.npy holds twice as many
  double mean_degree = 0;  // 2 * citations / nodes
  int64_t median_degree = 0;
  int64_t p99_degree = 0;
  int64_t max_degree = 0;
  int64_t isolated = 0;  // nodes of degree 0
  int64_t train = 0, val = 0, test = 0;
  double seconds = 0;
  int threads = 0;
};

// InvalidArgument for a scale or node count out of range (fewer than 1,000 nodes or more than
// 2^34), or an existing `dir` without `replace`; Internal for I/O errors (a full disk included),
// naming the file. On error nothing is left at `dir`.
absl::StatusOr<PapersStats> GeneratePapers(const PapersOptions& options, const std::string& dir);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_GENERATE_PAPERS_H_
