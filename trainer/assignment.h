#ifndef GRAPHSHARD_TRAINER_ASSIGNMENT_H_
#define GRAPHSHARD_TRAINER_ASSIGNMENT_H_

// Which trainer reads from which server (DESIGN.md, "Which trainer reads from which server").
// K servers (one per part), M trainers:
//  - M >= K: trainer r reads from server r mod K; the seeds of part p are cut into as many
//    contiguous chunks as there are trainers on p (r = p, p + K, ...), trainer r taking chunk
//    r / K. Every seed goes to exactly one trainer.
//  - M < K: trainer r reads every server p with p mod M == r, all of each part's seeds.
// The same rule is used for train, val and test seeds. Pure functions; thread-safe.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace graphshard::trainer {

struct ServerShare {
  int part = 0;        // the server (= part) to read from; it owns these seeds
  int chunk = 0;       // this trainer's chunk of that part's seeds ...
  int num_chunks = 1;  // ... out of this many (1 = all of them)
};

// The shares of trainer `rank`, ascending by part; never empty. InvalidArgument unless
// 0 <= rank < world_size and num_parts >= 1.
absl::StatusOr<std::vector<ServerShare>> AssignServers(int rank, int world_size, int num_parts);

// The contiguous chunk `chunk` of `num_chunks` nearly equal chunks of `ids` (sizes differ by at
// most one; the first n % num_chunks chunks are the longer ones). Requires
// 0 <= chunk < num_chunks.
absl::Span<const int64_t> ChunkOf(absl::Span<const int64_t> ids, int chunk, int num_chunks);

// The graph task's training share, redrawn every epoch as PyTorch's DistributedSampler does:
// `ids` (one part's training graphs) in a permutation drawn from (seed, epoch, part), then
// ChunkOf that order; returned ascending (the server shuffles the batches). The trainers of one
// part get disjoint chunks covering every id, and a different grouping each epoch. With
// num_chunks 1 it is all of `ids`.
std::vector<int64_t> EpochChunk(absl::Span<const int64_t> ids, const ServerShare& share,
                                uint64_t seed, int64_t epoch);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_ASSIGNMENT_H_
