// Graph classification over real partition servers: a minibatch streamed with seed type "graph"
// and fanouts [-1, -1] is a batch of whole graphs, and the trainer's per-epoch plan
// (EpochChunk + ScheduleEpoch, as train.cc runs it) shows every training graph at least once
// per epoch across ranks, repeating graphs only as padding.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "client/assignment.h"
#include "client/batch_client.h"
#include "client/epoch_plan.h"
#include "client/graph_task.h"
#include "client/server_set.h"
#include "common/partition_part.h"
#include "partitioner/tu_dataset.h"
#include "tests/server/test_cluster.h"

namespace graphshard::client {
namespace {

std::vector<int64_t> Int64s(ByteView v) {
  std::vector<int64_t> out(v.size / 8);
  if (!out.empty()) std::memcpy(out.data(), v.data, v.size);
  return out;
}

class GraphBatchesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto d = partitioner::GenerateGraphs({.seed = 3, .num_graphs = 90});
    ASSERT_TRUE(d.ok());
    tu_ = new partitioner::TuDataset(*std::move(d));
    auto g = partitioner::GraphFromTu(*tu_, 5);
    ASSERT_TRUE(g.ok());
    graph_ = new partitioner::Graph(*std::move(g));
    cluster_ = new graphshard::testing::TestCluster(*graph_, 2);
    DiscoveryOptions o;
    for (int p = 0; p < 2; ++p) o.servers.push_back(cluster_->server(p).address());
    o.server_wait_s = 10;
    auto set = ConnectServers(o);
    ASSERT_TRUE(set.ok()) << set.status();
    servers_ = new ServerSet(*std::move(set));
  }
  static void TearDownTestSuite() {
    delete servers_;
    delete cluster_;
    delete graph_;
    delete tu_;
  }
  static StreamOptions Stream(const std::vector<int64_t>& seeds, int64_t batch_size) {
    StreamOptions so;
    so.seeds = seeds;
    so.batch_size = batch_size;
    so.fanouts = WholeGraphFanouts();
    return so;
  }
  static std::vector<MinibatchData> ReadAll(int part, const StreamOptions& so) {
    auto stream =
        servers_->clients[static_cast<size_t>(part)]->StreamBatches(so, servers_->metadata);
    EXPECT_TRUE(stream.ok()) << stream.status();
    std::vector<MinibatchData> out;
    while (true) {
      auto next = (*stream)->Next();
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok() || !next->has_value()) break;
      out.push_back(**std::move(next));
    }
    return out;
  }
  static inline partitioner::TuDataset* tu_ = nullptr;
  static inline partitioner::Graph* graph_ = nullptr;
  static inline graphshard::testing::TestCluster* cluster_ = nullptr;
  static inline ServerSet* servers_ = nullptr;
};

TEST_F(GraphBatchesTest, MetadataIsAGraphTask) {
  auto layout = FindGraphTask(servers_->metadata);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_TRUE(IsGraphDataset(servers_->metadata));
  EXPECT_EQ(servers_->metadata.target_type, "graph");
  EXPECT_EQ(servers_->metadata.num_classes, 2);
}

TEST_F(GraphBatchesTest, BatchesHoldWholeGraphsBlockDiagonal) {
  const GraphTaskLayout l = *FindGraphTask(servers_->metadata);
  // Input edges per graph, as (orig src, orig dst) multisets.
  std::map<int64_t, std::multiset<std::pair<int64_t, int64_t>>> edges_of;
  std::map<int64_t, std::set<int64_t>> nodes_of;
  for (size_t e = 0; e < tu_->src.size(); ++e) {
    edges_of[tu_->graph_of_node[tu_->src[e]]].insert({tu_->src[e], tu_->dst[e]});
  }
  for (int64_t v = 0; v < tu_->num_nodes; ++v) nodes_of[tu_->graph_of_node[v]].insert(v);
  int64_t graphs_checked = 0;
  for (int part = 0; part < 2; ++part) {
    auto loaded = common::PartitionPart::Load(cluster_->partition_dir(), part);
    ASSERT_TRUE(loaded.ok());
    const common::NodeShard* node_shard = (*loaded)->FindNodes("node");
    const common::NodeShard* graph_shard = (*loaded)->FindNodes("graph");
    auto ids = servers_->clients[static_cast<size_t>(part)]->GetSplit("train");
    ASSERT_TRUE(ids.ok());
    for (const MinibatchData& b : ReadAll(part, Stream(*ids, 7))) {
      const std::vector<int64_t> graph_ids = Int64s(b.nodes[static_cast<size_t>(l.graph_type)].ids);
      const std::vector<int64_t> node_ids = Int64s(b.nodes[static_cast<size_t>(l.node_type)].ids);
      const std::vector<int64_t> labels = Int64s(b.nodes[static_cast<size_t>(l.graph_type)].labels);
      ASSERT_EQ(std::ssize(graph_ids), b.batch_size);  // only the seed graphs
      const EdgeBlockData& member = b.edges[static_cast<size_t>(l.membership)];
      const EdgeBlockData& edges = b.edges[static_cast<size_t>(l.edge_type)];
      const std::vector<int64_t> m_src = Int64s(member.src), m_dst = Int64s(member.dst);
      const std::vector<int64_t> e_src = Int64s(edges.src), e_dst = Int64s(edges.dst);
      // The batch vector: every node exactly once, in node order, so the membership edges' dst
      // array is PyG's `batch` (ascending: a graph's nodes are contiguous).
      std::vector<int64_t> graph_row(node_ids.size(), -1);
      ASSERT_EQ(m_src.size(), node_ids.size());
      for (size_t i = 0; i < m_src.size(); ++i) ASSERT_EQ(m_src[i], static_cast<int64_t>(i));
      ASSERT_TRUE(std::is_sorted(m_dst.begin(), m_dst.end()));
      for (size_t i = 0; i < m_src.size(); ++i) {
        ASSERT_EQ(graph_row[static_cast<size_t>(m_src[i])], -1) << "node in two graphs";
        graph_row[static_cast<size_t>(m_src[i])] = m_dst[i];
      }
      auto orig_node = [&](int64_t row) {
        return node_shard->orig_ids[node_ids[static_cast<size_t>(row)] - node_shard->begin];
      };
      std::map<int64_t, std::set<int64_t>> got_nodes;
      std::map<int64_t, std::multiset<std::pair<int64_t, int64_t>>> got_edges;
      for (size_t row = 0; row < node_ids.size(); ++row) {
        const int64_t g =
            graph_shard
                ->orig_ids[graph_ids[static_cast<size_t>(graph_row[row])] - graph_shard->begin];
        EXPECT_EQ(tu_->graph_of_node[orig_node(static_cast<int64_t>(row))], g);
        got_nodes[g].insert(orig_node(static_cast<int64_t>(row)));
      }
      for (size_t i = 0; i < e_src.size(); ++i) {
        // Block-diagonal: both ends in the same graph of the batch.
        ASSERT_EQ(graph_row[static_cast<size_t>(e_src[i])],
                  graph_row[static_cast<size_t>(e_dst[i])]);
        got_edges[tu_->graph_of_node[orig_node(e_dst[i])]].insert(
            {orig_node(e_src[i]), orig_node(e_dst[i])});
      }
      for (size_t r = 0; r < graph_ids.size(); ++r) {
        const int64_t g = graph_shard->orig_ids[graph_ids[r] - graph_shard->begin];
        EXPECT_EQ(got_nodes[g], nodes_of[g]) << "graph " << g;
        EXPECT_EQ(got_edges[g], edges_of[g]) << "graph " << g;
        EXPECT_EQ(labels[r], tu_->graph_labels[static_cast<size_t>(g)]);  // labels 0/1 as is
        ++graphs_checked;
      }
    }
  }
  EXPECT_EQ(graphs_checked, 72);  // 80% of 90
}

// What every rank streams in one epoch, planned as train.cc does: shares, EpochChunk, the
// largest natural batch count over ranks, ScheduleEpoch.
std::vector<std::vector<int64_t>> EpochGraphs(ServerSet& servers, int world, int64_t epoch,
                                              int64_t batch_size, std::vector<int64_t>* steps_out,
                                              std::vector<std::vector<int64_t>>* chunks_out) {
  struct RankPlan {
    std::vector<ShardSeeds> shards;
    std::vector<int64_t> natural;
  };
  std::vector<RankPlan> plans(static_cast<size_t>(world));
  int64_t steps = 0;
  for (int r = 0; r < world; ++r) {
    auto shares = AssignServers(r, world, 2);
    EXPECT_TRUE(shares.ok());
    int64_t total = 0;
    std::vector<int64_t> chunk_all;
    for (const ServerShare& s : *shares) {
      auto ids = servers.clients[static_cast<size_t>(s.part)]->GetSplit("train");
      EXPECT_TRUE(ids.ok());
      std::vector<int64_t> chunk = EpochChunk(*ids, s, /*seed=*/0, epoch);
      chunk_all.insert(chunk_all.end(), chunk.begin(), chunk.end());
      plans[static_cast<size_t>(r)].natural.push_back(
          NaturalBatches(std::ssize(chunk), batch_size));
      total += plans[static_cast<size_t>(r)].natural.back();
      plans[static_cast<size_t>(r)].shards.push_back({s.part, std::move(chunk)});
    }
    chunks_out->push_back(chunk_all);
    steps = std::max(steps, total);
  }
  std::vector<std::vector<int64_t>> seen(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    const RankPlan& p = plans[static_cast<size_t>(r)];
    const EpochSchedule schedule = ScheduleEpoch(p.natural, steps);
    int64_t batches = 0;
    for (size_t i = 0; i < p.shards.size(); ++i) {
      if (schedule.stream_batches[i] == 0) continue;
      StreamOptions so;
      so.seeds = p.shards[i].ids;
      so.batch_size = batch_size;
      so.shuffle_seed = StreamShuffleSeed(0, p.shards[i].part);
      so.epoch = epoch;
      so.num_batches = schedule.stream_batches[i];
      so.fanouts = WholeGraphFanouts();
      auto stream = servers.clients[static_cast<size_t>(p.shards[i].part)]->StreamBatches(
          so, servers.metadata);
      EXPECT_TRUE(stream.ok());
      while (true) {
        auto next = (*stream)->Next();
        EXPECT_TRUE(next.ok()) << next.status();
        if (!next.ok() || !next->has_value()) break;
        const MinibatchData& b = **next;
        const std::vector<int64_t> ids = Int64s(b.nodes[static_cast<size_t>(b.seed_block)].ids);
        seen[static_cast<size_t>(r)].insert(seen[static_cast<size_t>(r)].end(), ids.begin(),
                                            ids.begin() + b.batch_size);
        ++batches;
      }
    }
    steps_out->push_back(batches);
  }
  return seen;
}

TEST_F(GraphBatchesTest, EveryTrainingGraphOncePerEpochPaddingOnlyRepeats) {
  // 3 ranks over 2 servers: ranks 0 and 2 split part 0's graphs, rank 1 has all of part 1's;
  // the shards differ in size, so the shorter ones are padded to the same number of steps.
  std::set<int64_t> train;
  for (int p = 0; p < 2; ++p) {
    auto ids = servers_->clients[static_cast<size_t>(p)]->GetSplit("train");
    ASSERT_TRUE(ids.ok());
    train.insert(ids->begin(), ids->end());
  }
  std::vector<std::vector<int64_t>> chunks_by_epoch[2];
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    std::vector<int64_t> steps;
    std::vector<std::vector<int64_t>> chunks;
    const int64_t batch_size = 5;
    std::vector<std::vector<int64_t>> seen =
        EpochGraphs(*servers_, 3, epoch, batch_size, &steps, &chunks);
    EXPECT_EQ(steps[0], steps[1]);
    EXPECT_EQ(steps[1], steps[2]);
    std::set<int64_t> all;
    for (int r = 0; r < 3; ++r) {
      const std::vector<int64_t>& s = seen[static_cast<size_t>(r)];
      const std::set<int64_t> chunk(chunks[static_cast<size_t>(r)].begin(),
                                    chunks[static_cast<size_t>(r)].end());
      // The first |chunk| graphs are the chunk, each once; whatever follows is padding from the
      // same chunk.
      ASSERT_GE(s.size(), chunk.size());
      EXPECT_EQ(std::set<int64_t>(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(chunk.size())),
                chunk);
      for (int64_t g : s) EXPECT_TRUE(chunk.count(g)) << "rank " << r << " got graph " << g;
      all.insert(s.begin(), s.end());
    }
    EXPECT_EQ(all, train) << "epoch " << epoch;
    // Ranks 0 and 2 share part 0 without overlap.
    for (int64_t g : chunks[0]) {
      EXPECT_EQ(std::count(chunks[2].begin(), chunks[2].end(), g), 0);
    }
    chunks_by_epoch[epoch - 1] = chunks;
  }
  EXPECT_NE(chunks_by_epoch[0][0], chunks_by_epoch[1][0])
      << "part 0's grouping is redrawn per epoch";
  EXPECT_EQ(chunks_by_epoch[0][1], chunks_by_epoch[1][1]) << "rank 1 alone on part 1";
}

}  // namespace
}  // namespace graphshard::client
