// What the trainer's GPU sampler reads from the servers (client/graph_topology.h), against real
// in-process servers on Cora (2 parts, no Torch): every in-edge of the graph, once, each node's
// in order of its part's CSC, however many nodes a call asks for and how many calls are in
// flight, and when the servers refuse
// large calls; its progress reported while it goes; a part's server gone is an error naming the
// part, or, with a live replica, the same topology; and the labels of chosen nodes.

#include "client/graph_topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "client/part_directory.h"
#include "client/server_set.h"
#include "common/status_macros.h"
#include "tests/server/test_cluster.h"

namespace graphshard::client {
namespace {

class GraphTopologyTest : public ::testing::Test {
 protected:
  void Start(engine::Limits limits = {}) {
    graph_ = graphshard::testing::ReadCora();
    cluster_ = std::make_unique<graphshard::testing::TestCluster>(graph_, 2, limits);
    DiscoveryOptions o;
    o.registry_dir = cluster_->registry_dir();
    o.server_wait_s = 10;
    auto set = ConnectServers(o);
    ASSERT_TRUE(set.ok()) << set.status();
    servers_ = std::make_unique<ServerSet>(*std::move(set));
    client_of_ = [this](int part) -> absl::StatusOr<PartitionClient*> {
      return servers_->clients[static_cast<size_t>(part)];
    };
    // The input graph's id of every global id (parts own consecutive ranges, in part order).
    for (PartitionClient* c : servers_->clients) {
      auto orig = c->GetOrigIds();
      ASSERT_TRUE(orig.ok()) << orig.status();
      orig_.insert(orig_.end(), orig->begin(), orig->end());
    }
    ASSERT_EQ(std::ssize(orig_), graph_.node_types[0].num_nodes);
  }
  const ServerMetadata& md() const { return servers_->metadata; }

  // The topology's edges as (input src, input dst), sorted, against the input graph's.
  void ExpectTheInputGraphsEdges(const GraphTopology& t) const {
    const int64_t n = graph_.node_types[0].num_nodes;
    ASSERT_EQ(std::ssize(t.indptr), n + 1);
    ASSERT_EQ(t.indptr.back(), std::ssize(t.indices));
    std::vector<std::pair<int64_t, int64_t>> got, want;
    for (int64_t v = 0; v < n; ++v) {
      ASSERT_LE(t.indptr[v], t.indptr[v + 1]);
      for (int64_t e = t.indptr[v]; e < t.indptr[v + 1]; ++e) {
        got.emplace_back(orig_[static_cast<size_t>(t.indices[e])], orig_[static_cast<size_t>(v)]);
      }
    }
    const auto& et = graph_.edge_types[0];
    for (int64_t e = 0; e < et.src_ids.size(); ++e) want.emplace_back(et.src_ids[e], et.dst_ids[e]);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want);
  }

  partitioner::Graph graph_;
  std::unique_ptr<graphshard::testing::TestCluster> cluster_;
  std::unique_ptr<ServerSet> servers_;
  ClientOf client_of_;
  std::vector<int64_t> orig_;
};

TEST_F(GraphTopologyTest, ReadsEveryInEdgeOnceWhateverTheCallSize) {
  Start();
  auto whole = ReadTopology(md(), client_of_);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ExpectTheInputGraphsEdges(*whole);
  // What --sampler auto sizes the read by before it starts: the parts' edge counts summed.
  EXPECT_EQ(servers_->num_edges, std::ssize(whole->indices));
  // Small calls cut parts in many pieces, one call or many in flight per part (each part's
  // range split between threads): the same arrays, in the same order.
  for (int in_flight : {1, 2, 7, 64}) {
    SCOPED_TRACE(in_flight);
    auto pieces = ReadTopology(md(), client_of_, 7, in_flight);
    ASSERT_TRUE(pieces.ok()) << pieces.status();
    EXPECT_EQ(pieces->indptr, whole->indptr);
    EXPECT_EQ(pieces->indices, whole->indices);
  }
}

TEST_F(GraphTopologyTest, ReportsItsProgressUntilEveryNodeIsRead) {
  Start();
  std::vector<int64_t> done;
  TopologyProgress progress;
  progress.every = absl::Milliseconds(1);
  progress.report = [&](int64_t d, int64_t total, absl::Duration elapsed) {
    EXPECT_EQ(total, md().node_types[0].num_nodes);
    EXPECT_GE(elapsed, absl::ZeroDuration());
    done.push_back(d);
  };
  // One node a call, one call at a time: long enough for reports while it goes.
  auto t = ReadTopology(md(), client_of_, 1, 1, progress);
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectTheInputGraphsEdges(*t);
  // Thousands of round trips take far longer than 1 ms: reports came while it went too.
  ASSERT_GE(done.size(), 2u);
  EXPECT_TRUE(std::is_sorted(done.begin(), done.end()));
  EXPECT_EQ(done.back(), md().node_types[0].num_nodes);  // the last report: every node
}

TEST_F(GraphTopologyTest, AsksAgainInHalvesWhenTheServersRefuseALargeCall) {
  // Cora's largest in-degree is 168: calls of many nodes exceed 300 edges, one node never does.
  engine::Limits limits;
  limits.max_request_edges = 300;
  Start(limits);
  auto t = ReadTopology(md(), client_of_, 1 << 14);
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectTheInputGraphsEdges(*t);
}

TEST_F(GraphTopologyTest, ANodeAboveTheServersBudgetIsAnErrorNamingIt) {
  engine::Limits limits;
  limits.max_request_edges = 100;  // below the largest in-degree
  Start(limits);
  auto t = ReadTopology(md(), client_of_);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(t.status())) << t.status();
  EXPECT_NE(t.status().message().find("max-request-edges"), std::string::npos) << t.status();
}

TEST_F(GraphTopologyTest, AServerGoneIsAnErrorNamingItsPartOrALiveReplicaAnswers) {
  Start();
  auto before = ReadTopology(md(), client_of_);
  ASSERT_TRUE(before.ok()) << before.status();
  cluster_->server(1).Shutdown(absl::Seconds(1));
  // No replica: part 1's error, within the RPC deadline (the test's own timeout otherwise).
  auto gone = ReadTopology(md(), client_of_);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kUnavailable) << gone.status();
  EXPECT_TRUE(absl::StrContains(gone.status().message(), "part 1")) << gone.status();
  auto labels = ReadLabels(md(), client_of_, {md().node_types[0].num_nodes - 1});
  ASSERT_FALSE(labels.ok());
  EXPECT_TRUE(absl::StrContains(labels.status().message(), "part 1")) << labels.status();
  // A replica of part 1: the call that found its server gone is asked of it, the same arrays.
  server::ServerOptions so;
  so.partition_dir = cluster_->partition_dir();
  so.part = 1;
  so.replica = 1;
  so.registry_dir = cluster_->registry_dir();
  so.threads = 2;
  auto replica = server::PartitionServer::Start(so);
  ASSERT_TRUE(replica.ok()) << replica.status();
  int asked_part1 = 0;
  auto after = ReadTopology(md(), [&](int p) -> absl::StatusOr<PartitionClient*> {
    if (p == 1 && asked_part1++ == 0) return servers_->clients[1];  // the one now gone
    ASSIGN_OR_RETURN(
        PartDirectory::LiveServer live,
        servers_->directory->Live(p, 0, &servers_->metadata, absl::Now() + absl::Seconds(10)));
    return live.client;
  });
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GE(asked_part1, 2) << "part 1 was not asked again after its server went away";
  EXPECT_EQ(after->indptr, before->indptr);
  EXPECT_EQ(after->indices, before->indices);
  (*replica)->Shutdown(absl::Seconds(1));
}

TEST_F(GraphTopologyTest, ReadsTheLabelsOfAnyNodesInTheirOrder) {
  Start();
  const int64_t n = graph_.node_types[0].num_nodes;
  std::vector<int64_t> ids = {n - 1, 0, 5, n / 2, 3, n - 2};
  auto labels = ReadLabels(md(), client_of_, ids, 2);
  ASSERT_TRUE(labels.ok()) << labels.status();
  ASSERT_EQ(labels->size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ((*labels)[i], graph_.node_types[0].labels[orig_[static_cast<size_t>(ids[i])]])
        << "node " << ids[i];
  }
  auto outside = ReadLabels(md(), client_of_, {n});
  ASSERT_FALSE(outside.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(outside.status())) << outside.status();
}

}  // namespace
}  // namespace graphshard::client
