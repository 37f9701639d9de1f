#include "client/assignment.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphshard::client {
namespace {

std::vector<int64_t> Iota(int64_t begin, int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

// Every trainer's seeds over all parts: disjoint, covering, each from the part that owns it.
void ExpectDisjointAndCovering(int world_size, int num_parts, int64_t seeds_per_part,
                               Assignment mode = Assignment::kPart) {
  std::vector<std::vector<int64_t>> part_ids;
  for (int p = 0; p < num_parts; ++p) part_ids.push_back(Iota(p * 1000, seeds_per_part + p));
  std::multiset<int64_t> seen;
  std::set<int> parts_read;
  for (int r = 0; r < world_size; ++r) {
    absl::StatusOr<std::vector<ServerShare>> shares = AssignServers(r, world_size, num_parts, mode);
    ASSERT_TRUE(shares.ok()) << shares.status();
    ASSERT_FALSE(shares->empty());
    for (const ServerShare& s : *shares) {
      parts_read.insert(s.part);
      for (int64_t id : ChunkOf(part_ids[static_cast<size_t>(s.part)], s.chunk, s.num_chunks)) {
        EXPECT_EQ(id / 1000, s.part) << "seed read from a server that does not own it";
        seen.insert(id);
      }
    }
  }
  EXPECT_EQ(parts_read.size(), static_cast<size_t>(num_parts));
  size_t total = 0;
  for (const auto& ids : part_ids) {
    total += ids.size();
    for (int64_t id : ids) EXPECT_EQ(seen.count(id), 1u) << "seed " << id;
  }
  EXPECT_EQ(seen.size(), total);
}

TEST(AssignServers, MoreTrainersThanServersSplitsSeeds) {
  // M = 5, K = 2: part 0 <- trainers 0, 2, 4; part 1 <- trainers 1, 3.
  absl::StatusOr<std::vector<ServerShare>> s4 = AssignServers(4, 5, 2);
  ASSERT_TRUE(s4.ok());
  ASSERT_EQ(s4->size(), 1u);
  EXPECT_EQ((*s4)[0].part, 0);
  EXPECT_EQ((*s4)[0].chunk, 2);
  EXPECT_EQ((*s4)[0].num_chunks, 3);
  absl::StatusOr<std::vector<ServerShare>> s3 = AssignServers(3, 5, 2);
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ((*s3)[0].part, 1);
  EXPECT_EQ((*s3)[0].chunk, 1);
  EXPECT_EQ((*s3)[0].num_chunks, 2);
}

TEST(AssignServers, EqualCountsIsOneToOne) {
  for (int r = 0; r < 4; ++r) {
    absl::StatusOr<std::vector<ServerShare>> s = AssignServers(r, 4, 4);
    ASSERT_TRUE(s.ok());
    ASSERT_EQ(s->size(), 1u);
    EXPECT_EQ((*s)[0].part, r);
    EXPECT_EQ((*s)[0].num_chunks, 1);
  }
}

TEST(AssignServers, FewerTrainersReadSeveralServers) {
  // M = 2, K = 5: trainer 0 <- parts 0, 2, 4; trainer 1 <- parts 1, 3; full splits.
  absl::StatusOr<std::vector<ServerShare>> s0 = AssignServers(0, 2, 5);
  ASSERT_TRUE(s0.ok());
  ASSERT_EQ(s0->size(), 3u);
  EXPECT_EQ((*s0)[0].part, 0);
  EXPECT_EQ((*s0)[1].part, 2);
  EXPECT_EQ((*s0)[2].part, 4);
  for (const ServerShare& s : *s0) EXPECT_EQ(s.num_chunks, 1);
  absl::StatusOr<std::vector<ServerShare>> s1 = AssignServers(1, 2, 5);
  ASSERT_TRUE(s1.ok());
  ASSERT_EQ(s1->size(), 2u);
  EXPECT_EQ((*s1)[1].part, 3);
}

TEST(AssignServers, ShardsAreDisjointAndCovering) {
  for (int m = 1; m <= 7; ++m) {
    for (int k = 1; k <= 7; ++k) {
      SCOPED_TRACE(testing::Message() << "M=" << m << " K=" << k);
      ExpectDisjointAndCovering(m, k, 11);
      ExpectDisjointAndCovering(m, k, 1);  // fewer seeds than trainers: some chunks empty
    }
  }
}

TEST(AssignServers, RejectsBadArguments) {
  EXPECT_FALSE(AssignServers(2, 2, 1).ok());
  EXPECT_FALSE(AssignServers(-1, 2, 1).ok());
  EXPECT_FALSE(AssignServers(0, 0, 1).ok());
  EXPECT_FALSE(AssignServers(0, 1, 0).ok());
}

// AssignHostLocal over hosts given per rank and per part: every seed read exactly once, from a
// server on the reading trainer's host; returns the shares of each rank.
std::vector<std::vector<ServerShare>> ExpectHostLocal(const std::vector<std::string>& rank_hosts,
                                                      const std::vector<std::string>& part_hosts,
                                                      int64_t seeds_per_part,
                                                      Assignment mode = Assignment::kPart) {
  const int num_parts = static_cast<int>(part_hosts.size());
  std::vector<std::vector<int64_t>> part_ids;
  for (int p = 0; p < num_parts; ++p) part_ids.push_back(Iota(p * 1000, seeds_per_part + p));
  std::multiset<int64_t> seen;
  std::vector<std::vector<ServerShare>> all;
  for (int r = 0; r < std::ssize(rank_hosts); ++r) {
    absl::StatusOr<std::vector<ServerShare>> shares =
        AssignHostLocal(r, rank_hosts, part_hosts, mode);
    EXPECT_TRUE(shares.ok()) << shares.status();
    if (!shares.ok()) return {};
    EXPECT_FALSE(shares->empty()) << "rank " << r;
    for (const ServerShare& s : *shares) {
      EXPECT_EQ(part_hosts[static_cast<size_t>(s.part)], rank_hosts[static_cast<size_t>(r)])
          << "rank " << r << " reads part " << s.part << " of another host";
      for (int64_t id : ChunkOf(part_ids[static_cast<size_t>(s.part)], s.chunk, s.num_chunks)) {
        seen.insert(id);
      }
    }
    all.push_back(*shares);
  }
  for (const auto& ids : part_ids) {
    for (int64_t id : ids) EXPECT_EQ(seen.count(id), 1u) << "seed " << id;
  }
  return all;
}

TEST(AssignHostLocal, OneHostIsTheRankRule) {
  for (int m = 1; m <= 7; ++m) {
    for (int k = 1; k <= 7; ++k) {
      const std::vector<std::string> ranks(static_cast<size_t>(m), "h");
      const std::vector<std::string> parts(static_cast<size_t>(k), "h");
      for (int r = 0; r < m; ++r) {
        absl::StatusOr<std::vector<ServerShare>> local = AssignHostLocal(r, ranks, parts);
        absl::StatusOr<std::vector<ServerShare>> global = AssignServers(r, m, k);
        ASSERT_TRUE(local.ok() && global.ok());
        ASSERT_EQ(local->size(), global->size()) << "M=" << m << " K=" << k << " r=" << r;
        for (size_t i = 0; i < local->size(); ++i) {
          EXPECT_EQ((*local)[i].part, (*global)[i].part);
          EXPECT_EQ((*local)[i].chunk, (*global)[i].chunk);
          EXPECT_EQ((*local)[i].num_chunks, (*global)[i].num_chunks);
        }
      }
    }
  }
}

TEST(AssignHostLocal, TwoHostsTwoTrainersTwoPartsReadOnlyTheirOwnParts) {
  // The per-node launcher's layout: node r serves parts p mod 2 == r, runs ranks 2r, 2r + 1.
  const std::vector<std::string> ranks = {"A", "A", "B", "B"};
  const std::vector<std::string> parts = {"A", "B", "A", "B"};
  std::vector<std::vector<ServerShare>> shares = ExpectHostLocal(ranks, parts, 11);
  ASSERT_EQ(shares.size(), 4u);
  for (int r = 0; r < 4; ++r) ASSERT_EQ(shares[static_cast<size_t>(r)].size(), 1u);
  EXPECT_EQ(shares[0][0].part, 0);
  EXPECT_EQ(shares[1][0].part, 2);
  EXPECT_EQ(shares[2][0].part, 1);
  EXPECT_EQ(shares[3][0].part, 3);
  for (const auto& s : shares) EXPECT_EQ(s[0].num_chunks, 1);
}

TEST(AssignHostLocal, TwoHostsTwoTrainersOnePartSplitTheirPart) {
  const std::vector<std::string> ranks = {"A", "A", "B", "B"};
  std::vector<std::vector<ServerShare>> shares = ExpectHostLocal(ranks, {"A", "B"}, 11);
  ASSERT_EQ(shares.size(), 4u);
  EXPECT_EQ(shares[0][0].part, 0);
  EXPECT_EQ(shares[1][0].part, 0);
  EXPECT_EQ(shares[2][0].part, 1);
  EXPECT_EQ(shares[3][0].part, 1);
  EXPECT_EQ(shares[1][0].chunk, 1);
  EXPECT_EQ(shares[3][0].chunk, 1);
  for (const auto& s : shares) EXPECT_EQ(s[0].num_chunks, 2);
}

TEST(AssignHostLocal, UnevenAndInterleavedHosts) {
  // Host A: ranks 0, 2, 3 and part 1; host B: rank 1 and parts 0, 2, 3.
  const std::vector<std::string> ranks = {"A", "B", "A", "A"};
  std::vector<std::vector<ServerShare>> shares = ExpectHostLocal(ranks, {"B", "A", "B", "B"}, 11);
  ASSERT_EQ(shares.size(), 4u);
  for (int r : {0, 2, 3}) {
    ASSERT_EQ(shares[static_cast<size_t>(r)].size(), 1u);
    EXPECT_EQ(shares[static_cast<size_t>(r)][0].part, 1);
    EXPECT_EQ(shares[static_cast<size_t>(r)][0].num_chunks, 3);
  }
  EXPECT_EQ(shares[2][0].chunk, 1);
  EXPECT_EQ(shares[3][0].chunk, 2);
  ASSERT_EQ(shares[1].size(), 3u);
  EXPECT_EQ(shares[1][0].part, 0);
  EXPECT_EQ(shares[1][1].part, 2);
  EXPECT_EQ(shares[1][2].part, 3);
  // Every mix of 1-4 trainers and 1-4 parts on each of two hosts.
  for (int a = 1; a <= 4; ++a) {
    for (int b = 1; b <= 4; ++b) {
      for (int pa = 1; pa <= 4; ++pa) {
        for (int pb = 1; pb <= 4; ++pb) {
          SCOPED_TRACE(testing::Message()
                       << a << " x A, " << b << " x B, parts " << pa << "/" << pb);
          std::vector<std::string> rh(static_cast<size_t>(a), "A"), ph;
          rh.insert(rh.end(), static_cast<size_t>(b), "B");
          for (int p = 0; p < pa + pb; ++p) ph.push_back(p < pa ? "A" : "B");
          ExpectHostLocal(rh, ph, 5);
        }
      }
    }
  }
}

TEST(AssignHostLocal, RefusesAHostWithTrainersButNoPart) {
  const std::vector<std::string> ranks = {"A", "A", "C", "C"};
  absl::StatusOr<std::vector<ServerShare>> s = AssignHostLocal(0, ranks, {"A", "A"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()),
              testing::HasSubstr("host 'C' runs ranks 2, 3 but serves no part"));
  // The same answer on the rank of the host that has parts.
  EXPECT_EQ(AssignHostLocal(2, ranks, {"A", "A"}).status(), s.status());
}

TEST(AssignHostLocal, RefusesAHostWithPartsButNoTrainer) {
  absl::StatusOr<std::vector<ServerShare>> s = AssignHostLocal(1, {"A", "A"}, {"A", "B", "A", "B"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()),
              testing::HasSubstr("host 'B' serves parts 1, 3 but runs no trainer"));
}

TEST(AssignHostLocal, NoSharedHostUsesTheRankRule) {
  // Servers on their own nodes (the SLURM heterogeneous job): every batch crosses the network.
  const std::vector<std::string> ranks = {"G1", "G1", "G2"};
  const std::vector<std::string> parts = {"C1", "C2"};
  for (int r = 0; r < 3; ++r) {
    absl::StatusOr<std::vector<ServerShare>> local = AssignHostLocal(r, ranks, parts);
    absl::StatusOr<std::vector<ServerShare>> global = AssignServers(r, 3, 2);
    ASSERT_TRUE(local.ok()) << local.status();
    ASSERT_EQ(local->size(), global->size());
    EXPECT_EQ((*local)[0].part, (*global)[0].part);
    EXPECT_EQ((*local)[0].chunk, (*global)[0].chunk);
  }
}

TEST(AssignHostLocal, RejectsBadArguments) {
  EXPECT_EQ(AssignHostLocal(2, {"A", "A"}, {"A"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AssignHostLocal(0, {"A"}, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AssignServers, SpreadReadsEveryPartAndStillCoversEachSeedOnce) {
  for (int m = 1; m <= 5; ++m) {
    for (int k = 1; k <= 5; ++k) {
      ExpectDisjointAndCovering(m, k, 23, Assignment::kSpread);
      for (int r = 0; r < m; ++r) {
        absl::StatusOr<std::vector<ServerShare>> shares =
            AssignServers(r, m, k, Assignment::kSpread);
        ASSERT_TRUE(shares.ok());
        ASSERT_EQ(shares->size(), static_cast<size_t>(k)) << "M=" << m << " K=" << k;
        for (int p = 0; p < k; ++p) {
          EXPECT_EQ((*shares)[static_cast<size_t>(p)].part, p);
          EXPECT_EQ((*shares)[static_cast<size_t>(p)].chunk, r);
          EXPECT_EQ((*shares)[static_cast<size_t>(p)].num_chunks, m);
        }
      }
    }
  }
}

TEST(AssignHostLocal, SpreadStaysOnTheHostAndSplitsEveryLocalPart) {
  // 2 nodes x 2 trainers, 2 parts each: every trainer reads both parts of its node, half each.
  const std::vector<std::string> ranks = {"A", "A", "B", "B"};
  const std::vector<std::string> parts = {"A", "B", "A", "B"};
  std::vector<std::vector<ServerShare>> shares =
      ExpectHostLocal(ranks, parts, 11, Assignment::kSpread);
  ASSERT_EQ(shares.size(), 4u);
  const std::vector<int> parts_of_host[] = {{0, 2}, {0, 2}, {1, 3}, {1, 3}};
  for (size_t r = 0; r < 4; ++r) {
    ASSERT_EQ(shares[r].size(), 2u) << "rank " << r;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(shares[r][i].part, parts_of_host[r][i]);
      EXPECT_EQ(shares[r][i].chunk, static_cast<int>(r % 2));
      EXPECT_EQ(shares[r][i].num_chunks, 2);
    }
  }
  // The refusals do not depend on the mode.
  EXPECT_FALSE(AssignHostLocal(0, {"A", "B"}, {"A", "A"}, Assignment::kSpread).ok());
}

TEST(ChunkOf, ChunksDifferByAtMostOne) {
  std::vector<int64_t> ids = Iota(0, 10);
  EXPECT_EQ(ChunkOf(ids, 0, 3).size(), 4u);
  EXPECT_EQ(ChunkOf(ids, 1, 3).size(), 3u);
  EXPECT_EQ(ChunkOf(ids, 2, 3).size(), 3u);
  EXPECT_EQ(ChunkOf(ids, 1, 3)[0], 4);
  EXPECT_EQ(ChunkOf(ids, 2, 3)[0], 7);
}

TEST(EpochChunk, DisjointCoveringAndRedrawnEachEpoch) {
  const std::vector<int64_t> ids = Iota(100, 37);
  std::vector<int64_t> epoch1_chunk0;
  for (int64_t epoch = 1; epoch <= 3; ++epoch) {
    std::vector<int64_t> all;
    for (int c = 0; c < 3; ++c) {
      std::vector<int64_t> chunk =
          EpochChunk(ids, {.part = 1, .chunk = c, .num_chunks = 3}, 7, epoch);
      EXPECT_TRUE(std::is_sorted(chunk.begin(), chunk.end()));
      EXPECT_GE(chunk.size(), 12u);
      EXPECT_LE(chunk.size(), 13u);
      // Deterministic from (seed, epoch, part).
      EXPECT_EQ(chunk, EpochChunk(ids, {.part = 1, .chunk = c, .num_chunks = 3}, 7, epoch));
      if (epoch == 1 && c == 0) epoch1_chunk0 = chunk;
      if (epoch > 1 && c == 0) {
        EXPECT_NE(chunk, epoch1_chunk0);
      }
      all.insert(all.end(), chunk.begin(), chunk.end());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, ids) << "epoch " << epoch;
  }
  EXPECT_EQ(EpochChunk(ids, {.part = 0, .chunk = 0, .num_chunks = 1}, 7, 4), ids);
}

}  // namespace
}  // namespace graphshard::client
