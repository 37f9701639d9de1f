// Temporal sampling through real servers: StreamBatches with
// SamplingConfig.temporal on a generated temporal graph in 3 parts, peers asked over gRPC and
// over the bulk transport (so the seed times cross the wire), every sampled edge checked
// against its seed's time; and a partition without times refused with INVALID_ARGUMENT
// naming the missing files.

#include <map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "server/proto_convert.h"
#include "tests/server/test_cluster.h"
#include "tests/testing/temporal_fixture.h"

namespace graphshard::server {
namespace {

using testing::Context;

// Global id -> input id, from the partition folder's orig_id files (batches hold global ids).
std::vector<int64_t> OrigOf(const std::string& dir, int64_t num_nodes) {
  std::vector<int64_t> orig(static_cast<size_t>(num_nodes), -1);
  auto manifest = common::ReadManifest(dir);
  EXPECT_TRUE(manifest.ok()) << manifest.status();
  for (int p = 0; manifest.ok() && p < manifest->num_parts; ++p) {
    auto part = common::PartitionPart::Load(dir, p);
    EXPECT_TRUE(part.ok()) << part.status();
    if (!part.ok()) continue;
    const common::NodeShard* s = (*part)->FindNodes("node");
    for (int64_t r = 0; r < s->num_rows(); ++r) orig[s->begin + r] = s->orig_ids[r];
  }
  return orig;
}

class TemporalStreamTest : public ::testing::TestWithParam<PeerTransport> {};

TEST_P(TemporalStreamTest, NoStreamedEdgeIsLaterThanItsSeed) {
  const partitioner::Graph graph = testing::TemporalTestGraph(400, 10, 50, /*seed=*/21);
  const auto edge_time = testing::EdgeTimeOf(graph);
  const PeerTransport transport = GetParam();
  testing::TestCluster cluster(graph, 3, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc,
                               [transport](ServerOptions& o) { o.peer_transport = transport; });
  const std::vector<int64_t> orig = OrigOf(cluster.partition_dir(), 400);

  v1::GetSplitRequest split;
  split.set_split("train");
  v1::GetSplitResponse seeds;
  ASSERT_TRUE(cluster.Stub(1)->GetSplit(Context().get(), split, &seeds).ok());
  v1::StreamBatchesRequest r;
  r.set_seeds(seeds.ids());
  r.set_batch_size(32);
  r.set_shuffle(true);
  r.set_shuffle_seed(3);
  r.mutable_sampling()->add_fanouts(4);
  r.mutable_sampling()->add_fanouts(3);
  r.mutable_sampling()->set_temporal(v1::TEMPORAL_AT_OR_BEFORE);
  auto ctx = Context();
  auto reader = cluster.Stub(1)->StreamBatches(ctx.get(), r);
  v1::Minibatch m;
  int batches = 0;
  testing::TemporalEdgeCheck total;
  int64_t remote_hop2 = 0;
  while (reader->Read(&m)) {
    ++batches;
    testing::Decoded d = testing::Decode(m);
    const testing::DecodedBlock& n = d.nodes.at("node");
    const testing::DecodedEdges& e = d.edges.at("node__to__node");
    ASSERT_EQ(n.tree.size(), n.ids.size()) << "temporal batches are disjoint";
    std::vector<int64_t> seed_time;
    for (int64_t s = 0; s < d.batch_size; ++s) {
      seed_time.push_back(graph.node_types[0].time[orig[n.ids[s]]]);
    }
    const testing::TemporalEdgeCheck c =
        testing::CheckTemporalEdges(n.ids, n.tree, e.src, e.dst, orig, seed_time, edge_time);
    total.edges += c.edges;
    total.later += c.later;
    total.unknown += c.unknown;
    if (e.num_sampled.size() == 2) remote_hop2 += e.num_sampled[1];
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_GT(batches, 0);
  EXPECT_GT(total.edges, 200);
  EXPECT_GT(remote_hop2, 0);
  EXPECT_EQ(total.unknown, 0);
  EXPECT_EQ(total.later, 0);
}

INSTANTIATE_TEST_SUITE_P(Peers, TemporalStreamTest,
                         ::testing::Values(PeerTransport::kGrpc, PeerTransport::kBulk),
                         [](const auto& param) {
                           return param.param == PeerTransport::kGrpc ? std::string("Grpc")
                                                                      : std::string("Bulk");
                         });

TEST(TemporalStreamRefusal, PartitionWithoutTimesIsInvalidArgumentNamingTheFiles) {
  partitioner::Graph graph = testing::TemporalTestGraph(60, 3, 10, 4);
  graph.node_types[0].time = {};
  graph.edge_types[0].time = {};
  testing::TestCluster cluster(graph, 2);
  v1::GetSplitRequest split;
  split.set_split("train");
  v1::GetSplitResponse seeds;
  ASSERT_TRUE(cluster.Stub(0)->GetSplit(Context().get(), split, &seeds).ok());
  v1::StreamBatchesRequest r;
  r.set_seeds(seeds.ids());
  r.set_batch_size(8);
  r.mutable_sampling()->add_fanouts(2);
  r.mutable_sampling()->set_temporal(v1::TEMPORAL_BEFORE);
  auto ctx = Context();
  auto reader = cluster.Stub(0)->StreamBatches(ctx.get(), r);
  v1::Minibatch m;
  EXPECT_FALSE(reader->Read(&m));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("edge_time.npy"), std::string::npos)
      << status.error_message();

  // Metadata says which types have times (the trainer refuses before streaming).
  v1::Metadata md;
  ASSERT_TRUE(cluster.Stub(0)->GetMetadata(Context().get(), {}, &md).ok());
  EXPECT_FALSE(md.edge_types(0).has_time());
  EXPECT_FALSE(md.node_types(0).has_time());
}

TEST(TemporalStreamMetadata, TimesAreAnnounced) {
  testing::TestCluster cluster(testing::TemporalTestGraph(60, 3, 10, 4), 2);
  v1::Metadata md;
  ASSERT_TRUE(cluster.Stub(1)->GetMetadata(Context().get(), {}, &md).ok());
  EXPECT_TRUE(md.edge_types(0).has_time());
  EXPECT_TRUE(md.node_types(0).has_time());
}

}  // namespace
}  // namespace graphshard::server
