#ifndef GRAPHSHARD_COMMON_BATCH_ORDER_H_
#define GRAPHSHARD_COMMON_BATCH_ORDER_H_

// Which seeds make batch b of an epoch, and the random seeds its sampling draws from: pure
// functions of (shard, shuffle seed, epoch, b, hop, edge type). The servers' epoch streams
// (server/engine/epoch_stream.h, sample_hop.cc) and the trainer's GPU sampler
// (trainer/gpu_sampler.h) both use these, so a batch sampled on the GPU is the one a server
// would have sent. Header-only; the mixing functions compile for CUDA devices too (rng.h).

#include <cstdint>
#include <utility>
#include <vector>

#include "common/rng.h"

namespace graphshard::common {

inline constexpr uint64_t kBatchSamplingSalt = 0x5a3c9e1f00d2b7a1ULL;

// `order` shuffled for `epoch` (Fisher-Yates, from the end, with SplitMix64 of
// (shuffle_seed, epoch)). The swaps depend only on the size: shuffling positions 0..n-1 gives
// the permutation that shuffling any n seeds applies.
template <typename T>
void ShuffleForEpoch(std::vector<T>& order, uint64_t shuffle_seed, int64_t epoch) {
  SplitMix64 rng(MixSeed(shuffle_seed, static_cast<uint64_t>(epoch)));
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng.Below(i)]);
  }
}

// The seeds of batch `b` of the `shuffled` order: the first ceil(n / batch_size) batches cut it
// in pieces (the last may be short); further batches wrap around it at full size (at most n,
// so no seed repeats inside a batch).
template <typename T>
std::vector<T> BatchOfOrder(const std::vector<T>& shuffled, int64_t batch_size, int64_t b) {
  const int64_t n = static_cast<int64_t>(shuffled.size());
  const int64_t natural = (n + batch_size - 1) / batch_size;
  std::vector<T> out;
  if (b < natural) {
    const int64_t end = (b + 1) * batch_size < n ? (b + 1) * batch_size : n;
    out.assign(shuffled.begin() + b * batch_size, shuffled.begin() + end);
    return out;
  }
  const int64_t size = batch_size < n ? batch_size : n;
  for (int64_t i = 0; i < size; ++i) out.push_back(shuffled[(b * batch_size + i) % n]);
  return out;
}

// The sampling seed of batch `b` of `epoch` of a stream with `shuffle_seed`.
inline uint64_t BatchSamplingSeed(uint64_t shuffle_seed, int64_t epoch, int64_t b) {
  return MixSeed(MixSeed(shuffle_seed ^ kBatchSamplingSalt, static_cast<uint64_t>(epoch)),
                 static_cast<uint64_t>(b));
}

// The seed of hop `hop`'s draws over edge type `edge_type` (its index) in a batch sampled with
// `batch_seed`; node v's draws then use SplitMix64(MixSeed(hop item seed, v)).
GS_HOST_DEVICE inline uint64_t HopItemSeed(uint64_t batch_seed, int hop, uint64_t edge_type) {
  return MixSeed(MixSeed(batch_seed, static_cast<uint64_t>(hop)), edge_type);
}

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_BATCH_ORDER_H_
