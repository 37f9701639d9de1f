#ifndef GRAPHSHARD_TRAINER_EPOCH_PLAN_H_
#define GRAPHSHARD_TRAINER_EPOCH_PLAN_H_

// The minibatches of one trainer in one epoch, without Torch or gRPC: which seeds, sent to
// which server, with which sampling seed. Deterministic in (seed, epoch, rank, step) so a run
// can be reproduced. Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace graphshard::trainer {

// The seeds this trainer owns on one server (its share of one split).
struct ShardSeeds {
  int part = 0;
  std::vector<int64_t> ids;
};

struct PlannedBatch {
  int part = 0;                // the server that owns every seed of the batch
  std::vector<int64_t> seeds;  // distinct, all owned by `part`
};

struct PlanOptions {
  int batch_size = 256;
  bool shuffle = true;  // training: shuffle with (seed, epoch); evaluation: keep order
  uint64_t seed = 0;
  int64_t epoch = 0;
};

// Cuts each shard into batches of at most batch_size seeds (a batch never mixes servers), after
// shuffling each shard's seeds when asked; with several shards the batch order is shuffled too
// (training) so servers are interleaved. Empty shards contribute nothing.
std::vector<PlannedBatch> PlanEpoch(absl::Span<const ShardSeeds> shards, const PlanOptions& opts);

// Sampling seed of one minibatch: a hash of (seed, epoch, rank, step). `stream` separates
// training (0) from evaluation streams (1 = val, 2 = test) so they never share draws.
uint64_t BatchSampleSeed(uint64_t seed, int64_t epoch, int rank, int64_t step, int stream);

// Number of steps per epoch for a trainer with `num_batches` batches: every rank runs
// max_batches steps (the all-reduced maximum); step s uses batch s % num_batches, so a rank
// with fewer batches wraps around its seeds. Returns -1 for "no batch" (num_batches == 0).
int64_t BatchForStep(int64_t step, int64_t num_batches);

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

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_EPOCH_PLAN_H_
