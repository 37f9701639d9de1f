#ifndef GRAPHSHARD_CLIENT_ASSIGNMENT_H_
#define GRAPHSHARD_CLIENT_ASSIGNMENT_H_

// Which trainer reads from which server (docs/DESIGN.md, "Which trainer reads from which server").
// K servers (one per part), M trainers:
//  - M >= K: trainer r reads from server r mod K; the seeds of part p are cut into as many
//    contiguous chunks as there are trainers on p (r = p, p + K, ...), trainer r taking chunk
//    r / K. Every seed goes to exactly one trainer.
//  - M < K: trainer r reads every server p with p mod M == r, all of each part's seeds.
// The same rule is used for train, val and test seeds.
// Assignment::kSpread (--assignment spread) instead gives every trainer every part, chunk r of
// M: each server then streams to every trainer, each trainer merges every server's stream, and
// a trainer is fed by all servers rather than by one (2 trainers on 2 parts: 2 streams each).
// Across hosts (AssignHostLocal) the rule is applied within each host: a trainer reads only
// servers on its own host, and a host's parts are split among that host's trainers.
// Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/choices.h"

namespace graphshard::client {

struct ServerShare {
  int part = 0;        // the server (= part) to read from; it owns these seeds
  int chunk = 0;       // this trainer's chunk of that part's seeds ...
  int num_chunks = 1;  // ... out of this many (1 = all of them)
};

// The shares of trainer `rank`, ascending by part; never empty. InvalidArgument unless
// 0 <= rank < world_size and num_parts >= 1.
absl::StatusOr<std::vector<ServerShare>> AssignServers(int rank, int world_size, int num_parts,
                                                       Assignment mode = Assignment::kPart);

// Host-local assignment (docs/DESIGN.md, "Which trainer reads from which server"). rank_hosts[r] is
// the host id of rank r (shm::HostId()), part_hosts[p] that of part p's server. Ranks are grouped
// by host in rank order, parts by the host of their server in part order, and AssignServers'
// rule applies within each host: a host with T trainers and P parts gives its trainer i (the
// i-th lowest rank there) part i mod P, chunk i / P, when T >= P, else the parts j with
// j mod T == i (j, i: indices among the host's parts and trainers). One host is exactly
// AssignServers(rank, world_size, num_parts, mode); with kSpread a trainer reads every part of
// its host, chunk i of T.
// A layout where no trainer shares a host with any server (servers on their own nodes, as in
// the SLURM heterogeneous job) falls back to AssignServers: every batch crosses the network
// anyway. FailedPrecondition, naming the hosts with their ranks or parts, when some hosts have
// trainers and servers but another has trainers and no part, or parts and no trainer: the
// same answer on every rank (it depends only on the arguments). InvalidArgument for a rank
// outside rank_hosts or no parts.
absl::StatusOr<std::vector<ServerShare>> AssignHostLocal(int rank,
                                                         absl::Span<const std::string> rank_hosts,
                                                         absl::Span<const std::string> part_hosts,
                                                         Assignment mode = Assignment::kPart);

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

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_ASSIGNMENT_H_
