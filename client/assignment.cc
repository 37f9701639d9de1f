#include "client/assignment.h"

#include <algorithm>
#include <cassert>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/rng.h"
#include "common/status_macros.h"

namespace graphshard::client {

absl::StatusOr<std::vector<ServerShare>> AssignServers(int rank, int world_size, int num_parts,
                                                       Assignment mode) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in [0, world size ", world_size, ")"));
  }
  if (num_parts < 1) {
    return absl::InvalidArgumentError(absl::StrCat("num_parts ", num_parts, " must be >= 1"));
  }
  std::vector<ServerShare> shares;
  if (mode == Assignment::kSpread) {
    for (int part = 0; part < num_parts; ++part) shares.push_back({part, rank, world_size});
  } else if (world_size >= num_parts) {
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

namespace {

// "ranks 2, 3" / "part 1" / "parts 0, 2".
std::string Listed(absl::string_view what, const std::vector<int>& ids) {
  return absl::StrCat(what, ids.size() == 1 ? "" : "s", " ", absl::StrJoin(ids, ", "));
}

}  // namespace

absl::StatusOr<std::vector<ServerShare>> AssignHostLocal(int rank,
                                                         absl::Span<const std::string> rank_hosts,
                                                         absl::Span<const std::string> part_hosts,
                                                         Assignment mode) {
  const int world_size = static_cast<int>(rank_hosts.size());
  const int num_parts = static_cast<int>(part_hosts.size());
  if (rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in [0, world size ", world_size, ")"));
  }
  if (num_parts < 1) return absl::InvalidArgumentError("no parts to assign");
  // Per host (in order of first appearance, ranks first): its ranks and its parts, ascending.
  std::vector<std::string> hosts;
  std::vector<std::vector<int>> ranks_of, parts_of;
  auto index_of = [&](const std::string& host) {
    auto it = std::find(hosts.begin(), hosts.end(), host);
    if (it != hosts.end()) return static_cast<size_t>(it - hosts.begin());
    hosts.push_back(host);
    ranks_of.emplace_back();
    parts_of.emplace_back();
    return hosts.size() - 1;
  };
  for (int r = 0; r < world_size; ++r)
    ranks_of[index_of(rank_hosts[static_cast<size_t>(r)])].push_back(r);
  for (int p = 0; p < num_parts; ++p)
    parts_of[index_of(part_hosts[static_cast<size_t>(p)])].push_back(p);
  bool shared = false;
  std::vector<std::string> problems;
  for (size_t h = 0; h < hosts.size(); ++h) {
    if (!ranks_of[h].empty() && !parts_of[h].empty()) shared = true;
    if (parts_of[h].empty()) {
      problems.push_back(absl::StrCat("host '", hosts[h], "' runs ", Listed("rank", ranks_of[h]),
                                      " but serves no part"));
    } else if (ranks_of[h].empty()) {
      problems.push_back(absl::StrCat("host '", hosts[h], "' serves ", Listed("part", parts_of[h]),
                                      " but runs no trainer"));
    }
  }
  if (!shared) return AssignServers(rank, world_size, num_parts, mode);  // no host has both
  if (!problems.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "host-local assignment: ", absl::StrJoin(problems, "; "),
        ". A trainer reads only servers on its own host, so every host with a trainer must "
        "serve a part and every part's host must run a trainer (or no trainer may share a "
        "host with a server)"));
  }
  const size_t h = index_of(rank_hosts[static_cast<size_t>(rank)]);
  const std::vector<int>& ranks = ranks_of[h];
  const std::vector<int>& parts = parts_of[h];
  const int local = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
  ASSIGN_OR_RETURN(
      std::vector<ServerShare> shares,
      AssignServers(local, static_cast<int>(ranks.size()), static_cast<int>(parts.size()), mode));
  for (ServerShare& share : shares) share.part = parts[static_cast<size_t>(share.part)];
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
    common::SplitMix64 rng(common::MixSeed(common::MixSeed(seed, static_cast<uint64_t>(epoch)),
                                           static_cast<uint64_t>(share.part)));
    for (int64_t i = std::ssize(order) - 1; i > 0; --i) {
      std::swap(order[static_cast<size_t>(i)], order[rng.Below(static_cast<uint64_t>(i) + 1)]);
    }
  }
  absl::Span<const int64_t> chunk = ChunkOf(order, share.chunk, share.num_chunks);
  std::vector<int64_t> out(chunk.begin(), chunk.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace graphshard::client
