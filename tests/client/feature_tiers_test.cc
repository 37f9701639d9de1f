// What the trainer's tiered feature store (trainer/feature_store.h) reads from the servers,
// against real in-process servers on Cora (2 parts, no Torch): rows of chosen parts in part
// order (the host tier), rows by id in any order from the parts that own them (the remote
// tier), equal to the rows read whole; and the visit counts that rank the device tier's rows.

#include <gtest/gtest.h>

#include <atomic>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/feature_rows.h"
#include "client/server_set.h"
#include "client/visit_counts.h"
#include "shm/ring.h"
#include "tests/server/test_cluster.h"

namespace graphshard::client {
namespace {

class FeatureTiersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ =
        std::make_unique<graphshard::testing::TestCluster>(graphshard::testing::ReadCora(), 2);
    DiscoveryOptions o;
    o.registry_dir = cluster_->registry_dir();
    o.server_wait_s = 10;
    auto set = ConnectServers(o);
    ASSERT_TRUE(set.ok()) << set.status();
    servers_ = std::make_unique<ServerSet>(*std::move(set));
    client_of_ = [this](int part) -> absl::StatusOr<PartitionClient*> {
      return servers_->clients[static_cast<size_t>(part)];
    };
    // Every row, read whole, in id order.
    const absl::Status read = ReadFeatureRows(
        md(), 0, FeatureDtype::kFloat32, client_of_, 1000,
        [this](int64_t, int64_t, std::string rows) -> absl::Status {
          all_rows_ += rows;
          return absl::OkStatus();
        });
    ASSERT_TRUE(read.ok()) << read;
    ASSERT_EQ(std::ssize(all_rows_), md().node_types[0].num_nodes * row_bytes());
  }
  const ServerMetadata& md() const { return servers_->metadata; }
  int64_t row_bytes() const { return md().node_types[0].feat_dim * 4; }
  std::string RowOf(int64_t id) const {
    return all_rows_.substr(static_cast<size_t>(id * row_bytes()),
                            static_cast<size_t>(row_bytes()));
  }
  // `rows` (float32) are the rows of `ids`, in order; `what` names the case on failure.
  void ExpectRowsOf(const absl::StatusOr<std::string>& rows, const std::vector<int64_t>& ids,
                    const std::string& what) const {
    ASSERT_TRUE(rows.ok()) << rows.status() << " (" << what << ")";
    ASSERT_EQ(std::ssize(*rows), std::ssize(ids) * row_bytes()) << what;
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t width = static_cast<size_t>(row_bytes());
      EXPECT_EQ(rows->substr(i * width, width), RowOf(ids[i]))
          << "id " << ids[i] << ", " << what;
    }
  }

  std::unique_ptr<graphshard::testing::TestCluster> cluster_;
  std::unique_ptr<ServerSet> servers_;
  ClientOf client_of_;
  std::string all_rows_;
};

TEST_F(FeatureTiersTest, RowsOfChosenPartsComeInPartOrderNumberedFromZero) {
  const std::vector<int64_t>& off = md().node_types[0].part_offsets;
  ASSERT_EQ(off.size(), 3u);
  std::string part1;
  int64_t next_row = 0;
  const absl::Status read = ReadFeatureRows(
      md(), 0, FeatureDtype::kFloat32, client_of_, 100,
      [&](int64_t first_row, int64_t n, std::string rows) -> absl::Status {
        EXPECT_EQ(first_row, next_row);
        next_row += n;
        part1 += rows;
        return absl::OkStatus();
      },
      {false, true});
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(next_row, off[2] - off[1]);
  EXPECT_EQ(part1, all_rows_.substr(static_cast<size_t>(off[1] * row_bytes())));
}

// Many small chunks, fetched 8 at a time, still reach the sink one at a time and in order; the
// sink's error ends the read with nothing handed over after it.
TEST_F(FeatureTiersTest, ParallelCallsHandRowsOverInOrderAndStopAtTheSinksError) {
  std::string rows_read;
  int64_t next_row = 0;
  std::atomic<int> inside{0};
  absl::Status read = ReadFeatureRows(
      md(), 0, FeatureDtype::kFloat32, client_of_, 37,
      [&](int64_t first_row, int64_t n, std::string rows) -> absl::Status {
        EXPECT_EQ(inside.fetch_add(1), 0) << "the sink is called one at a time";
        EXPECT_EQ(first_row, next_row);
        next_row += n;
        rows_read += rows;
        inside.fetch_sub(1);
        return absl::OkStatus();
      });
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(rows_read, all_rows_);
  int calls = 0;
  read = ReadFeatureRows(md(), 0, FeatureDtype::kFloat32, client_of_, 37,
                         [&](int64_t, int64_t, std::string) -> absl::Status {
                           return ++calls == 3 ? absl::DataLossError("disk gone")
                                               : absl::OkStatus();
                         });
  EXPECT_EQ(read, absl::DataLossError("disk gone"));
  EXPECT_EQ(calls, 3);
}

TEST_F(FeatureTiersTest, RowsByIdInAnyOrderWithRepeatsAcrossPartsEqualTheWholeTable) {
  const std::vector<int64_t>& off = md().node_types[0].part_offsets;
  const std::vector<int64_t> ids = {off[2] - 1, 0, off[1], off[1] - 1, 5, 5, off[1] + 7};
  for (const int64_t per_call : {int64_t{1}, int64_t{2}, int64_t{1000}}) {
    ExpectRowsOf(GatherRowsById(md(), 0, FeatureDtype::kFloat32, client_of_, ids, per_call), ids,
                 absl::StrCat(per_call, " per call"));
  }
  // 16-bit rows are half the size.
  absl::StatusOr<std::string> half = GatherRowsById(md(), 0, FeatureDtype::kBFloat16, client_of_,
                                                     ids);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(std::ssize(*half), std::ssize(ids) * row_bytes() / 2);
  // Nothing asked, nothing sent.
  absl::StatusOr<std::string> none = GatherRowsById(md(), 0, FeatureDtype::kFloat32, client_of_,
                                                     {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(FeatureTiersTest, AnIdOutsideTheTypeOrAServerErrorIsNamed) {
  const int64_t n = md().node_types[0].num_nodes;
  for (const int64_t bad : {n, int64_t{-1}}) {
    absl::StatusOr<std::string> rows =
        GatherRowsById(md(), 0, FeatureDtype::kFloat32, client_of_, {bad});
    EXPECT_TRUE(absl::IsInvalidArgument(rows.status())) << rows.status();
    EXPECT_NE(rows.status().message().find(std::to_string(bad)), std::string::npos);
  }
  const ClientOf gone = [](int part) -> absl::StatusOr<PartitionClient*> {
    return absl::UnavailableError(absl::StrCat("no live server of part ", part));
  };
  absl::StatusOr<std::string> rows = GatherRowsById(md(), 0, FeatureDtype::kFloat32, gone, {1});
  EXPECT_TRUE(absl::IsUnavailable(rows.status())) << rows.status();
  EXPECT_NE(rows.status().message().find("part 0"), std::string::npos);
  EXPECT_EQ(PartOfId(md().node_types[0].part_offsets, 0), 0);
  EXPECT_EQ(PartOfId(md().node_types[0].part_offsets, md().node_types[0].part_offsets[1]), 1);
  EXPECT_EQ(PartOfId(md().node_types[0].part_offsets, n - 1), 1);
}

// A call whose server is gone (UNAVAILABLE, fast) is asked again of a live replica up to three
// more times, so that a gateway server that lost a peer at the same moment has found the peer's
// other replica (e2e.tiered_store_failover met a single retry that came too soon); one that
// ran into its deadline (a hung server) only once more; other errors never. Each retry looks
// the part up anew.
TEST_F(FeatureTiersTest, AGoneServerIsAskedAgainThreeTimesAHungOneOnce) {
  int lookups = 0;
  const ClientOf counted = [&](int part) {
    ++lookups;
    return client_of_(part);
  };
  const auto scripted = [](std::vector<absl::Status> script, int* calls) {
    return [script = std::move(script), calls](PartitionClient&) -> absl::StatusOr<int> {
      const size_t i = static_cast<size_t>((*calls)++);
      if (i < script.size() && !script[i].ok()) return script[i];
      return 7;
    };
  };
  const absl::Status gone = absl::UnavailableError("peer part 1 gone");
  const absl::Status hung = absl::DeadlineExceededError("deadline");
  int calls = 0;
  absl::StatusOr<int> got = AskLivePart(counted, 0, scripted({gone, gone, gone}, &calls));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, 7);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(lookups, 4);

  calls = 0;
  got = AskLivePart(counted, 0, scripted({gone, gone, gone, gone, gone}, &calls));
  EXPECT_TRUE(absl::IsUnavailable(got.status())) << got.status();
  EXPECT_EQ(calls, 1 + kLivePartRetries);

  calls = 0;
  got = AskLivePart(counted, 0, scripted({hung, hung, hung}, &calls));
  EXPECT_TRUE(absl::IsDeadlineExceeded(got.status())) << got.status();
  EXPECT_EQ(calls, 2) << "a hung server costs its deadline twice, not four times";

  calls = 0;
  got = AskLivePart(counted, 0, scripted({hung, gone, gone}, &calls));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(calls, 4);

  calls = 0;
  got = AskLivePart(counted, 0, scripted({absl::InvalidArgumentError("bad id")}, &calls));
  EXPECT_TRUE(absl::IsInvalidArgument(got.status())) << got.status();
  EXPECT_EQ(calls, 1);

  // No live replica left at a retry: the lookup's error.
  int asked = 0;
  const ClientOf dies = [&](int part) -> absl::StatusOr<PartitionClient*> {
    if (asked++ > 0) return absl::UnavailableError("no live server of part 0");
    return client_of_(part);
  };
  calls = 0;
  got = AskLivePart(dies, 0, scripted({gone}, &calls));
  EXPECT_EQ(got.status().message(), "no live server of part 0") << got.status();
  EXPECT_EQ(calls, 1);
}

// The remote tier asks its own host's servers for any part's rows (RowRoute::gateway_parts):
// the server reads what it maps and asks the owners for the rest. Same rows in the same order,
// inline or in shared memory, through one gateway or several, whatever the chunking.
TEST_F(FeatureTiersTest, RowsOfAnyPartThroughTheHostsServersEqualTheOwnersRows) {
  const std::vector<int64_t>& off = md().node_types[0].part_offsets;
  const std::vector<int64_t> ids = {off[2] - 1, 0, off[1], off[1] - 1, 5, 5, off[1] + 7, 3};
  for (const std::vector<int>& gateways :
       {std::vector<int>{0}, std::vector<int>{1}, std::vector<int>{1, 0}}) {
    for (const std::string& host : {std::string(), shm::HostId()}) {
      for (const int64_t per_call : {int64_t{1}, int64_t{3}, int64_t{1000}}) {
        const RowRoute route{.gateway_parts = gateways, .client_host_id = host};
        ExpectRowsOf(
            GatherRowsById(md(), 0, FeatureDtype::kFloat32, client_of_, ids, per_call, route), ids,
            absl::StrCat("gateway ", gateways[0], ", shm ", !host.empty(), ", ", per_call,
                         " per call"));
      }
    }
  }
}

// Asked directly, a server refuses an id outside the type or an unknown type, naming it.
TEST_F(FeatureTiersTest, AServerAskedForAnyPartsRowsRefusesBadIdsNamingThem) {
  const NodeTypeInfo& t = md().node_types[0];
  PartitionClient& server = *servers_->clients[0];
  GatherRowsOptions any;
  any.any_part = true;
  for (const int64_t bad : {t.num_nodes, int64_t{-3}}) {
    absl::StatusOr<std::string> rows =
        server.GatherRows(t.name, {int64_t{0}, bad}, t.feat_dim, FeatureDtype::kFloat32, any);
    EXPECT_TRUE(absl::IsInvalidArgument(rows.status())) << rows.status();
    EXPECT_NE(rows.status().message().find(std::to_string(bad)), std::string::npos)
        << rows.status();
  }
  absl::StatusOr<std::string> rows =
      server.GatherRows("no_such_type", {int64_t{0}}, t.feat_dim, FeatureDtype::kFloat32, any);
  EXPECT_TRUE(absl::IsInvalidArgument(rows.status())) << rows.status();
  EXPECT_NE(rows.status().message().find("no_such_type"), std::string::npos) << rows.status();
  // Without any_part a server still answers only its own rows.
  rows = server.GatherRows(t.name, {t.part_offsets[1]}, t.feat_dim, FeatureDtype::kFloat32);
  EXPECT_FALSE(rows.ok());
}

// Servers whose peers are as on other hosts (no mapping: every other part's row crosses their
// data plane) behind a hot-row cache: the rows a trainer gets through its host's server are
// the owners' rows, the first time and again from the cache.
TEST(FeatureTiersAcrossHosts, RowsThroughAServerWhosePeersAreRemoteEqualTheOwnersRows) {
  graphshard::testing::TestCluster cluster(
      graphshard::testing::ReadCora(), 2, {}, {}, server::PeerFeatures::kLocal,
      server::PeerSampling::kLocal, [](server::ServerOptions& so) {
        so.isolated_peers = true;
        so.peer_cache_bytes = 1 << 20;
      });
  DiscoveryOptions o;
  o.registry_dir = cluster.registry_dir();
  o.server_wait_s = 10;
  absl::StatusOr<ServerSet> servers = ConnectServers(o);
  ASSERT_TRUE(servers.ok()) << servers.status();
  const ClientOf client_of = [&](int part) -> absl::StatusOr<PartitionClient*> {
    return servers->clients[static_cast<size_t>(part)];
  };
  const ServerMetadata& md = servers->metadata;
  const int64_t n = md.node_types[0].num_nodes;
  std::vector<int64_t> ids;
  for (int64_t id = n - 1; id >= 0; id -= 7) ids.push_back(id);
  absl::StatusOr<std::string> direct =
      GatherRowsById(md, 0, FeatureDtype::kFloat32, client_of, ids);
  ASSERT_TRUE(direct.ok()) << direct.status();
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<std::string> through = GatherRowsById(
        md, 0, FeatureDtype::kFloat32, client_of, ids, 100,
        RowRoute{.gateway_parts = {0}, .client_host_id = shm::HostId()});
    ASSERT_TRUE(through.ok()) << through.status();
    EXPECT_TRUE(*through == *direct) << "round " << round;
  }
}

// Visit counts: the hottest ids are those batches hold most often, ties to the lower id.
TEST(VisitCounts, TheHottestAreTheIdsBatchesVisitMostTiesToTheLowerId) {
  ServerMetadata md;
  md.node_types.push_back({.name = "paper", .num_nodes = 6, .feat_dim = 2});
  md.node_types.push_back({.name = "author", .num_nodes = 3, .feat_dim = 0});
  VisitCounts counts(md);
  const auto batch = [](std::vector<int64_t> papers, std::vector<int64_t> authors) {
    auto ids = std::make_shared<std::vector<std::vector<int64_t>>>(
        std::vector<std::vector<int64_t>>{std::move(papers), std::move(authors)});
    MinibatchData b;
    for (const std::vector<int64_t>& v : *ids) {
      NodeBlockData block;
      block.num_nodes = std::ssize(v);
      block.ids = {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)};
      b.nodes.push_back(block);
    }
    b.owner = ids;
    return b;
  };
  counts.Add(batch({4, 1, 3}, {2}));
  counts.Add(batch({4, 3, 0}, {2, 0}));
  counts.Add(batch({4, 5}, {}));
  EXPECT_EQ(counts.visits(0), 8);
  EXPECT_EQ(counts.visits(1), 3);
  EXPECT_EQ(counts.Hottest(0, 1), (std::vector<int64_t>{4}));
  EXPECT_EQ(counts.Hottest(0, 2), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(counts.Hottest(0, 3), (std::vector<int64_t>{0, 3, 4}));  // 0, 1, 5 tie: 0
  EXPECT_EQ(counts.Hottest(0, 100), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(counts.Hottest(0, -1).empty());
  EXPECT_EQ(counts.Hottest(1, 1), (std::vector<int64_t>{2}));
  EXPECT_EQ(counts.VisitsTo(0, {3, 4}), 5);
  // Among the eligible ids only (the host cache ranks the rows no other tier took).
  const auto not_4 = [](int64_t id) { return id != 4; };
  EXPECT_EQ(counts.Hottest(0, 2, not_4), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(counts.Hottest(0, 100, not_4), (std::vector<int64_t>{0, 1, 2, 3, 5}));
  EXPECT_TRUE(counts.Hottest(0, 3, [](int64_t) { return false; }).empty());
}

}  // namespace
}  // namespace graphshard::client
