#include "trainer/epoch_plan.h"

#include <string>

#include "absl/strings/str_format.h"
#include "common/rng.h"

namespace graphshard::trainer {
namespace {

// Fisher-Yates with our own generator: std::shuffle's algorithm is unspecified, and plans must
// be identical across standard libraries (this machine and the GPU machine).
template <typename T>
void Shuffle(std::vector<T>& v, uint64_t seed) {
  common::SplitMix64 rng(seed);
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.Below(i));
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

std::vector<PlannedBatch> PlanEpoch(absl::Span<const ShardSeeds> shards, const PlanOptions& opts) {
  std::vector<PlannedBatch> batches;
  const size_t b = static_cast<size_t>(opts.batch_size > 0 ? opts.batch_size : 1);
  const uint64_t epoch_seed =
      common::MixSeed(opts.seed, static_cast<uint64_t>(opts.epoch) ^ 0x5eed5eedULL);
  for (const ShardSeeds& shard : shards) {
    std::vector<int64_t> ids = shard.ids;
    if (opts.shuffle) Shuffle(ids, common::MixSeed(epoch_seed, static_cast<uint64_t>(shard.part)));
    for (size_t begin = 0; begin < ids.size(); begin += b) {
      const size_t end = std::min(ids.size(), begin + b);
      batches.push_back(
          {shard.part, std::vector<int64_t>(ids.begin() + static_cast<ptrdiff_t>(begin),
                                            ids.begin() + static_cast<ptrdiff_t>(end))});
    }
  }
  if (opts.shuffle && shards.size() > 1) Shuffle(batches, common::Mix64(epoch_seed));
  return batches;
}

uint64_t BatchSampleSeed(uint64_t seed, int64_t epoch, int rank, int64_t step, int stream) {
  uint64_t h = common::MixSeed(seed, static_cast<uint64_t>(stream));
  h = common::MixSeed(h, static_cast<uint64_t>(epoch));
  h = common::MixSeed(h, static_cast<uint64_t>(rank));
  return common::MixSeed(h, static_cast<uint64_t>(step));
}

int64_t BatchForStep(int64_t step, int64_t num_batches) {
  if (num_batches <= 0) return -1;
  return step % num_batches;
}

void Fnv1a64::Update(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h_ ^= p[i];
    h_ *= 0x100000001b3ULL;
  }
}

std::string Fnv1a64::Hex() const { return absl::StrFormat("%016x", h_); }

}  // namespace graphshard::trainer
