// python/loader_core.h against real in-process servers (Cora, 2 parts): the contract's status
// codes, two ranks splitting the train split with equal step counts, streams that go on into
// the next epoch with that epoch's batches, and a stopped server surfacing as an error naming
// it.
#include "python/loader_core.h"

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "shm/ring.h"
#include "tests/server/test_cluster.h"

namespace graphshard::python {
namespace {

std::vector<int64_t> Int64s(client::ByteView v) {
  std::vector<int64_t> out(v.size / 8);
  if (!out.empty()) std::memcpy(out.data(), v.data, v.size);
  return out;
}

LoaderOptions Options(const graphshard::testing::TestCluster& cluster, int rank, int world) {
  LoaderOptions o;
  o.registry_dir = cluster.partition_dir() + "/../registry";
  o.batch_size = 16;
  o.rank = rank;
  o.world_size = world;
  o.server_wait_s = 20;
  o.rpc_timeout_s = 20;
  return o;
}

TEST(LoaderCore, BadOptionsAreInvalidArgumentNamingTheOption) {
  auto expect_invalid = [](LoaderOptions o, const std::string& mention) {
    auto core = LoaderCore::Connect(o);
    ASSERT_FALSE(core.ok()) << mention;
    EXPECT_EQ(core.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(core.status().message().find(mention), absl::string_view::npos) << core.status();
  };
  LoaderOptions o;
  o.registry_dir = "/nonexistent";
  expect_invalid([&] { auto x = o; x.split = "dev"; return x; }(), "split");
  expect_invalid([&] { auto x = o; x.batch_size = 0; return x; }(), "batch_size");
  expect_invalid([&] { auto x = o; x.fanouts = {5, 0}; return x; }(), "num_neighbors");
  expect_invalid([&] { auto x = o; x.rank = 2; x.world_size = 2; return x; }(), "rank");
  expect_invalid([&] { auto x = o; x.servers = {"h:1"}; return x; }(), "registry");
  expect_invalid([&] { auto x = o; x.max_held_batches = 0; return x; }(), "max_held_batches");
  expect_invalid([&] { auto x = o; x.stall_timeout_s = 0; return x; }(), "stall_timeout_s=0");
  expect_invalid([&] { auto x = o; x.rpc_timeout_s = -1; return x; }(), "rpc_timeout_s=-1");
}

TEST(LoaderCore, TwoRanksShareTheSplitInEqualSteps) {
  graphshard::testing::TestCluster cluster(graphshard::testing::ReadCora(), 2);
  const std::vector<std::string> hosts(2, shm::HostId());
  std::set<int64_t> seen;
  int64_t steps = 0;
  std::vector<std::unique_ptr<LoaderCore>> cores;
  for (int rank = 0; rank < 2; ++rank) {
    auto core = LoaderCore::Connect(Options(cluster, rank, 2));
    ASSERT_TRUE(core.ok()) << core.status();
    EXPECT_EQ((*core)->StartEpoch(1, 1).code(), absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE((*core)->Assign(hosts).ok());
    ASSERT_EQ((*core)->shares().size(), 1u);
    EXPECT_EQ((*core)->shares()[0].part, rank);  // one host, default (part): rank r reads part r
    steps = std::max(steps, (*core)->natural_steps());
    cores.push_back(*std::move(core));
  }
  int64_t total = 0;
  for (auto& core : cores) {
    total += core->num_seeds();
    EXPECT_EQ(core->StartEpoch(1, core->natural_steps() - 1).code(),
              absl::StatusCode::kInvalidArgument);
    ASSERT_TRUE(core->StartEpoch(1, steps).ok());
    for (int64_t s = 0; s < steps; ++s) {
      absl::StatusOr<LoaderStep> step = core->Next();
      ASSERT_TRUE(step.ok()) << step.status();
      ASSERT_FALSE(step->end) << "step " << s;
      ASSERT_TRUE(step->batch.has_value());
      EXPECT_TRUE(step->batch->shared_memory);
      EXPECT_EQ(step->batch->epoch, 1);
      const std::vector<int64_t> ids = Int64s(step->batch->nodes[0].ids);
      seen.insert(ids.begin(), ids.begin() + step->batch->batch_size);
    }
    absl::StatusOr<LoaderStep> end = core->Next();
    ASSERT_TRUE(end.ok()) << end.status();
    EXPECT_TRUE(end->end);
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), total);  // every train seed, once or more
  EXPECT_EQ(total, 140);                                // Cora's public train split
}

TEST(LoaderCore, SpreadAssignmentReadsEveryPartOfTheHost) {
  graphshard::testing::TestCluster cluster(graphshard::testing::ReadCora(), 2);
  const std::vector<std::string> hosts(2, shm::HostId());
  for (int rank = 0; rank < 2; ++rank) {
    LoaderOptions o = Options(cluster, rank, 2);
    o.assignment = client::Assignment::kSpread;
    auto core = LoaderCore::Connect(o);
    ASSERT_TRUE(core.ok()) << core.status();
    ASSERT_TRUE((*core)->Assign(hosts).ok());
    ASSERT_EQ((*core)->shares().size(), 2u);  // both parts, chunk `rank` of 2 each
    for (int p = 0; p < 2; ++p) {
      EXPECT_EQ((*core)->shares()[static_cast<size_t>(p)].part, p);
      EXPECT_EQ((*core)->shares()[static_cast<size_t>(p)].chunk, rank);
      EXPECT_EQ((*core)->shares()[static_cast<size_t>(p)].num_chunks, 2);
    }
  }
}

TEST(LoaderCore, InputNodesAreTheSeedsEachPartGettingItsOwn) {
  graphshard::testing::TestCluster cluster(graphshard::testing::ReadCora(), 2);
  LoaderOptions o = Options(cluster, 0, 1);
  o.shuffle = false;
  auto core = LoaderCore::Connect(o);
  ASSERT_TRUE(core.ok()) << core.status();
  const int64_t n = (*core)->metadata().num_nodes;
  auto expect_invalid = [&](std::vector<int64_t> ids, const std::string& type) {
    const absl::Status s = (*core)->SetInputNodes(type, std::move(ids));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("input_nodes"), absl::string_view::npos) << s;
  };
  expect_invalid({}, "");
  expect_invalid({0, n}, "");
  expect_invalid({-1}, "");
  expect_invalid({4, 2, 4}, "");
  expect_invalid({1}, "no_such_type");
  std::vector<int64_t> ids;
  for (int64_t v = n - 1; v >= 0; v -= 5) ids.push_back(v);  // not the parts' own order
  ASSERT_TRUE((*core)->SetInputNodes("", ids).ok());
  ASSERT_TRUE((*core)->Assign({shm::HostId()}).ok());
  EXPECT_EQ((*core)->num_seeds(), std::ssize(ids));
  ASSERT_TRUE((*core)->StartEpoch(1, (*core)->natural_steps()).ok());
  std::vector<std::vector<int64_t>> per_part(2);
  for (;;) {
    absl::StatusOr<LoaderStep> step = (*core)->Next();
    ASSERT_TRUE(step.ok()) << step.status();
    if (step->end) break;
    const std::vector<int64_t> got = Int64s(step->batch->nodes[0].ids);
    per_part[static_cast<size_t>(step->part)].insert(
        per_part[static_cast<size_t>(step->part)].end(), got.begin(),
        got.begin() + step->batch->batch_size);
  }
  const std::vector<int64_t>& offsets = (*core)->metadata().part_offsets;
  for (size_t p = 0; p < 2; ++p) {  // each part: the ids it owns, unshuffled: in the order given
    std::vector<int64_t> want;
    for (int64_t v : ids) {
      if (v >= offsets[p] && v < offsets[p + 1]) want.push_back(v);
    }
    EXPECT_EQ(per_part[p], want) << "part " << p;
  }
}

// The ids of every batch of `core`'s open epoch, read to its end.
std::vector<std::vector<int64_t>> ReadEpoch(LoaderCore& core, int64_t epoch) {
  std::vector<std::vector<int64_t>> out;
  while (true) {
    absl::StatusOr<LoaderStep> step = core.Next();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok() || step->end) break;
    if (!step->batch.has_value()) continue;
    EXPECT_EQ(step->batch->epoch, epoch);
    out.push_back(Int64s(step->batch->nodes[0].ids));
  }
  return out;
}

// The streams go on into the next epoch (the servers build it while this one ends): epoch 2
// after a whole epoch 1 is epoch 2 of a fresh loader, batch for batch; an epoch left early, a
// jump or another step count opens new streams, with that epoch's batches.
TEST(LoaderCore, TheNextEpochContinuesTheStreamsWithTheSameBatches) {
  graphshard::testing::TestCluster cluster(graphshard::testing::ReadCora(), 2);
  const std::vector<std::string> hosts = {shm::HostId()};
  auto connect = [&] {
    auto core = LoaderCore::Connect(Options(cluster, 0, 1));
    EXPECT_TRUE(core.ok()) << core.status();
    EXPECT_TRUE((*core)->Assign(hosts).ok());
    return *std::move(core);
  };
  std::unique_ptr<LoaderCore> fresh = connect();
  const int64_t steps = fresh->natural_steps();
  std::vector<std::vector<std::vector<int64_t>>> want;  // [epoch - 1][step]
  for (int64_t epoch = 1; epoch <= 4; ++epoch) {
    std::unique_ptr<LoaderCore> one = connect();
    ASSERT_TRUE(one->StartEpoch(epoch, steps).ok());
    want.push_back(ReadEpoch(*one, epoch));
    ASSERT_EQ(std::ssize(want.back()), steps);
  }
  EXPECT_NE(want[0], want[1]);  // shuffled anew each epoch

  std::unique_ptr<LoaderCore> core = connect();
  ASSERT_TRUE(core->StartEpoch(1, steps).ok());
  EXPECT_EQ(ReadEpoch(*core, 1), want[0]);
  ASSERT_TRUE(core->StartEpoch(2, steps).ok());  // continued
  EXPECT_EQ(ReadEpoch(*core, 2), want[1]);
  ASSERT_TRUE(core->StartEpoch(3, steps).ok());  // left after two steps
  ASSERT_TRUE(core->Next().ok());
  ASSERT_TRUE(core->Next().ok());
  ASSERT_TRUE(core->StartEpoch(3, steps).ok());  // epoch 3 again, from its start
  EXPECT_EQ(ReadEpoch(*core, 3), want[2]);
  ASSERT_TRUE(core->StartEpoch(1, steps).ok());  // back to epoch 1
  EXPECT_EQ(ReadEpoch(*core, 1), want[0]);
  ASSERT_TRUE(core->StartEpoch(4, steps).ok());  // a jump
  EXPECT_EQ(ReadEpoch(*core, 4), want[3]);
  ASSERT_TRUE(core->StartEpoch(5, steps + 1).ok());  // another step count: one more batch
  EXPECT_EQ(std::ssize(ReadEpoch(*core, 5)), steps + 1);
}

TEST(LoaderCore, AStoppedServerIsAnErrorNamingIt) {
  graphshard::testing::TestCluster cluster(graphshard::testing::ReadCora(), 2);
  LoaderOptions o = Options(cluster, 0, 1);
  o.batch_size = 1;
  auto core = LoaderCore::Connect(o);
  ASSERT_TRUE(core.ok()) << core.status();
  ASSERT_TRUE((*core)->Assign({shm::HostId()}).ok());
  ASSERT_TRUE((*core)->StartEpoch(1, (*core)->natural_steps()).ok());
  ASSERT_TRUE((*core)->Next().ok());
  const std::string address = cluster.server(1).address();
  cluster.server(1).Shutdown(absl::ZeroDuration());
  absl::Status error;
  for (int64_t s = 1; s <= (*core)->natural_steps() && error.ok(); ++s) {
    absl::StatusOr<LoaderStep> step = (*core)->Next();
    error = step.status();
  }
  ASSERT_FALSE(error.ok()) << "no error after the server stopped";
  EXPECT_NE(error.message().find(address), absl::string_view::npos) << error;
}

}  // namespace
}  // namespace graphshard::python
