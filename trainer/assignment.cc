#include "trainer/assignment.h"

#include <algorithm>
#include <cassert>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"

namespace graphshard::trainer {

absl::StatusOr<std::vector<ServerShare>> AssignServers(int rank, int world_size, int num_parts) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in [0, world size ", world_size, ")"));
  }
  if (num_parts < 1) {
    return absl::InvalidArgumentError(absl::StrCat("num_parts ", num_parts, " must be >= 1"));
  }
  std::vector<ServerShare> shares;
  if (world_size >= num_parts) {
    const int part = rank % num_parts;
    // Trainers on `part` are part, part + K, ...: there are ceil((M - part) / K) of them.
    const int num_chunks = (world_size - part + num_parts - 1) / num_parts;
    shares.push_back({part, rank / num_parts, num_chunks});
  } else {
    for (int part = rank; part < num_parts; part += world_size) {
      shares.push_back({part, 0, 1});
    }
  }
  return shares;
}

absl::Span<const int64_t> ChunkOf(absl::Span<const int64_t> ids, int chunk, int num_chunks) {
  assert(num_chunks >= 1 && chunk >= 0 && chunk < num_chunks);
  const size_t n = ids.size();
  const size_t k = static_cast<size_t>(num_chunks);
  const size_t c = static_cast<size_t>(chunk);
  const size_t base = n / k;
  const size_t extra = n % k;
  const size_t begin = c * base + std::min(c, extra);
  const size_t len = base + (c < extra ? 1 : 0);
  return ids.subspan(begin, len);
}

std::vector<int64_t> EpochChunk(absl::Span<const int64_t> ids, const ServerShare& share,
                                uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(ids.begin(), ids.end());
  if (share.num_chunks > 1) {
    common::SplitMix64 rng(common::MixSeed(
        common::MixSeed(seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(share.part)));
    for (int64_t i = std::ssize(order) - 1; i > 0; --i) {
      std::swap(order[static_cast<size_t>(i)],
                order[rng.Below(static_cast<uint64_t>(i) + 1)]);
    }
  }
  absl::Span<const int64_t> chunk = ChunkOf(order, share.chunk, share.num_chunks);
  std::vector<int64_t> out(chunk.begin(), chunk.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace graphshard::trainer
