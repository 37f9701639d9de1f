#ifndef GRAPHSHARD_CLIENT_EPOCH_PLAN_H_
#define GRAPHSHARD_CLIENT_EPOCH_PLAN_H_

// The steps of one trainer in one epoch, without Torch or gRPC. A trainer reads one
// StreamBatches stream per server it is assigned to (the server shuffles and cuts the seeds:
// batch b of an epoch is a function of (shard, shuffle seed, epoch, b)); this file decides how
// many batches each stream carries and in which order the trainer takes them, so that every rank
// runs the same number of steps and a run can resume at any step. Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace graphshard::client {

// The seeds this trainer owns on one server (its share of one split).
struct ShardSeeds {
  int part = 0;
  std::vector<int64_t> ids;
  // "train", "val" or "test": the split the ids come from (link streams name it to the server,
  // their ids being positions in that edge split).
  std::string split{};
};

// ceil(num_seeds / batch_size); 0 for no seeds.
int64_t NaturalBatches(int64_t num_seeds, int64_t batch_size);

struct EpochSchedule {
  // Batches each stream carries (the request's num_batches; 0 = the stream is not opened).
  std::vector<int64_t> stream_batches;
  // Step s takes the next batch of stream step_stream[s]; -1 = no batch (a rank without seeds
  // joins the step with zero gradients).
  std::vector<int> step_stream;
};

// `steps` (>= the sum of `natural`) steps over streams with natural[i] batches each. The first
// stream with batches also takes the surplus steps - sum(natural) (the server wraps around its
// shuffled seeds with full batches). Streams are interleaved in proportion to their batch
// counts: each step takes the stream least far along (taken / total), ties to the lower index.
EpochSchedule ScheduleEpoch(absl::Span<const int64_t> natural, int64_t steps);

// For a resume at `step`: how many batches of each stream the steps [0, step) took (the
// first_batch of each stream's request).
std::vector<int64_t> BatchesBefore(const EpochSchedule& schedule, int64_t step);

// Shuffle seed of a training stream: one per (run seed, part), so that parts differ.
uint64_t StreamShuffleSeed(uint64_t seed, int part);

// Seed of the model's randomness (dropout) at one step of one rank: set before each step, so a
// resumed run draws the same masks as an uninterrupted one.
uint64_t StepSeed(uint64_t seed, int64_t epoch, int rank, int64_t step);

// FNV-1a 64 over a sequence of byte ranges (incremental), for the weights fingerprint.
class Fnv1a64 {
 public:
  void Update(const void* data, size_t size);
  uint64_t value() const { return h_; }
  // 16 lowercase hex digits.
  std::string Hex() const;

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_EPOCH_PLAN_H_
