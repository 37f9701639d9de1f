#include "client/epoch_plan.h"

#include <cassert>
#include <string>

#include "absl/strings/str_format.h"
#include "common/rng.h"

namespace graphshard::client {

int64_t NaturalBatches(int64_t num_seeds, int64_t batch_size) {
  if (num_seeds <= 0 || batch_size <= 0) return 0;
  return (num_seeds + batch_size - 1) / batch_size;
}

EpochSchedule ScheduleEpoch(absl::Span<const int64_t> natural, int64_t steps) {
  EpochSchedule s;
  s.stream_batches.assign(natural.begin(), natural.end());
  int64_t total = 0;
  for (int64_t n : natural) total += n;
  assert(steps >= total);
  for (int64_t& n : s.stream_batches) {
    if (n > 0) {
      n += steps - total;  // the surplus, on the first stream with batches
      total = steps;
      break;
    }
  }
  s.step_stream.assign(static_cast<size_t>(steps), -1);
  if (total == 0) return s;  // no seeds: every step without a batch
  std::vector<int64_t> taken(s.stream_batches.size(), 0);
  for (int64_t step = 0; step < steps; ++step) {
    int best = -1;
    for (size_t i = 0; i < taken.size(); ++i) {
      const int64_t n = s.stream_batches[i];
      if (taken[i] >= n) continue;
      // taken[i] / n < taken[best] / n_best, in integers.
      if (best < 0 || taken[i] * s.stream_batches[static_cast<size_t>(best)] <
                          taken[static_cast<size_t>(best)] * n) {
        best = static_cast<int>(i);
      }
    }
    s.step_stream[static_cast<size_t>(step)] = best;
    ++taken[static_cast<size_t>(best)];
  }
  return s;
}

std::vector<int64_t> BatchesBefore(const EpochSchedule& schedule, int64_t step) {
  std::vector<int64_t> before(schedule.stream_batches.size(), 0);
  for (int64_t s = 0; s < step && s < std::ssize(schedule.step_stream); ++s) {
    const int i = schedule.step_stream[static_cast<size_t>(s)];
    if (i >= 0) ++before[static_cast<size_t>(i)];
  }
  return before;
}

uint64_t StreamShuffleSeed(uint64_t seed, int part) {
  return common::MixSeed(common::MixSeed(seed, 0x5eed5eedULL), static_cast<uint64_t>(part));
}

uint64_t StepSeed(uint64_t seed, int64_t epoch, int rank, int64_t step) {
  uint64_t h = common::MixSeed(seed, 0xd0d0ULL);
  h = common::MixSeed(h, static_cast<uint64_t>(epoch));
  h = common::MixSeed(h, static_cast<uint64_t>(rank));
  // torch::manual_seed takes the value as is; keep it below 2^63 for its int64 paths.
  return common::MixSeed(h, static_cast<uint64_t>(step)) >> 1;
}

void Fnv1a64::Update(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h_ ^= p[i];
    h_ *= 0x100000001b3ULL;
  }
}

std::string Fnv1a64::Hex() const { return absl::StrFormat("%016x", h_); }

}  // namespace graphshard::client
