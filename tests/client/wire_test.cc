#include "client/internal/wire.h"

#include <cstring>
#include <vector>

#include "client/resuming_stream.h"
#include "shm/ring.h"
#include "common/bytes.h"
#include "common/transient_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphshard::client::internal {
namespace {

std::string Floats(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

v1::Minibatch ValidBatch() {
  v1::Minibatch m;
  m.set_batch_size(1);
  v1::NodeBlock* n = m.add_nodes();
  n->set_node_type("node");
  n->mutable_ids()->set_data(common::ToBytes<int64_t>({7, 3, 9}));
  n->set_feat_dim(2);
  n->mutable_features()->set_data(Floats({1, 2, 3, 4, 5, 6}));
  n->mutable_labels()->set_data(common::ToBytes<int64_t>({0, 1, 2}));
  n->add_num_sampled_nodes(1);  // the seed, then 2 nodes at hop 1
  n->add_num_sampled_nodes(2);
  v1::EdgeBlock* e = m.add_edges();
  e->set_edge_type("node__to__node");
  e->mutable_src()->set_data(common::ToBytes<int64_t>({1, 2}));
  e->mutable_dst()->set_data(common::ToBytes<int64_t>({0, 0}));
  e->add_num_sampled_edges(2);
  return m;
}

// Two hops, one node each: 3 -> 7 (hop 0, into the seed), 9 -> 3 (hop 1).
v1::Minibatch TwoHopBatch() {
  v1::Minibatch m = ValidBatch();
  m.mutable_nodes(0)->clear_num_sampled_nodes();
  for (int64_t c : {1, 1, 1}) m.mutable_nodes(0)->add_num_sampled_nodes(c);
  m.mutable_edges(0)->mutable_dst()->set_data(common::ToBytes<int64_t>({0, 1}));
  m.mutable_edges(0)->clear_num_sampled_edges();
  for (int64_t c : {1, 1}) m.mutable_edges(0)->add_num_sampled_edges(c);
  return m;
}

ServerMetadata Homogeneous() {
  v1::Metadata m;
  m.set_num_parts(1);
  m.set_feat_dim(2);
  m.set_num_classes(3);
  return *DecodeMetadata(m);
}

int64_t At(const ByteView& v, size_t i) {
  int64_t x;
  std::memcpy(&x, v.data + i * 8, 8);
  return x;
}

TEST(DecodeMinibatch, ReadsAValidBatchInPlace) {
  auto m = std::make_shared<v1::Minibatch>(ValidBatch());
  absl::StatusOr<MinibatchData> b = DecodeMinibatch(m, Homogeneous());
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->nodes.size(), 1u);
  EXPECT_EQ(b->nodes[0].num_nodes, 3);
  EXPECT_EQ(b->nodes[0].features.data, m->nodes(0).features().data().data());  // no copy
  EXPECT_EQ(b->edges[0].num_edges, 2);
  EXPECT_EQ(At(b->edges[0].src, 1), 2);
  EXPECT_EQ(At(b->nodes[0].labels, 2), 2);
  EXPECT_FALSE(b->shared_memory);
}

// --feature-store device: no rows, and every id must be a row of the trainer's copy.
TEST(DecodeMinibatch, ABatchWithoutFeaturesHasNoRowsAndIdsInsideTheGraph) {
  v1::Metadata md;
  md.set_num_parts(1);
  md.set_feat_dim(2);
  md.set_num_classes(3);
  md.set_target_type("node");
  v1::NodeTypeMeta* t = md.add_node_types();
  t->set_name("node");
  t->set_num_nodes(10);
  t->set_feat_dim(2);
  t->set_num_classes(3);
  for (int64_t o : {0, 10}) t->add_part_offsets(o);
  absl::StatusOr<ServerMetadata> meta = DecodeMetadata(md);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->node_types[0].part_offsets, (std::vector<int64_t>{0, 10}));

  v1::Minibatch lean = ValidBatch();
  lean.set_features_omitted(true);
  lean.mutable_nodes(0)->mutable_features()->clear_data();
  absl::StatusOr<MinibatchData> b = DecodeMinibatch(std::make_shared<v1::Minibatch>(lean), *meta);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->features_omitted);
  EXPECT_EQ(b->nodes[0].features.size, 0u);

  v1::Minibatch with_rows = ValidBatch();  // says omitted, sends rows anyway
  with_rows.set_features_omitted(true);
  EXPECT_EQ(DecodeMinibatch(std::make_shared<v1::Minibatch>(with_rows), *meta).status().code(),
            absl::StatusCode::kDataLoss);

  v1::Minibatch outside = lean;  // id 10 of a 10-node graph
  outside.mutable_nodes(0)->mutable_ids()->set_data(common::ToBytes<int64_t>({7, 10, 9}));
  absl::Status s = DecodeMinibatch(std::make_shared<v1::Minibatch>(outside), *meta).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("id 10 at row 1"));

  t->clear_part_offsets();  // offsets that do not cover the type's nodes
  for (int64_t o : {0, 11}) t->add_part_offsets(o);
  EXPECT_EQ(DecodeMetadata(md).status().code(), absl::StatusCode::kDataLoss);
}

TEST(DecodeMinibatch, RejectsInconsistentBatches) {
  auto expect_data_loss = [&](v1::Minibatch m, absl::string_view mention) {
    absl::StatusOr<MinibatchData> b =
        DecodeMinibatch(std::make_shared<v1::Minibatch>(std::move(m)), Homogeneous());
    ASSERT_FALSE(b.ok()) << mention;
    EXPECT_EQ(b.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(b.status().message().find(mention), absl::string_view::npos) << b.status().message();
  };
  v1::Minibatch m = ValidBatch();
  m.mutable_edges(0)->mutable_src()->set_data(common::ToBytes<int64_t>({1, 3}));
  expect_data_loss(m, "src[1] = 3");
  m = ValidBatch();
  m.mutable_edges(0)->mutable_dst()->set_data(common::ToBytes<int64_t>({0}));
  expect_data_loss(m, "dst");
  m = ValidBatch();
  m.mutable_nodes(0)->mutable_features()->set_data(Floats({1, 2, 3}));
  expect_data_loss(m, "features");
  m = ValidBatch();
  m.mutable_nodes(0)->mutable_labels()->set_data(common::ToBytes<int64_t>({0}));
  expect_data_loss(m, "labels");
  m = ValidBatch();
  m.set_batch_size(4);
  expect_data_loss(m, "batch_size");
  m = ValidBatch();
  m.mutable_nodes(0)->mutable_ids()->set_data(std::string(5, 'x'));
  expect_data_loss(m, "multiple of 8");
  m = ValidBatch();
  m.add_nodes()->set_node_type("other");
  expect_data_loss(m, "node and");
  m = ValidBatch();
  m.set_shm_name("/x");  // not a name this server makes: never opened (docs/SECURITY.md)
  expect_data_loss(m, "not one of this server's");
  ServerMetadata md = Homogeneous();
  md.shm_prefix = "/graphshard-12-ab-";
  md.shm_key = "wire-test-key-0123456789";
  const std::string ours = shm::TaggedSegmentName("/graphshard-12-ab-3", md.shm_key);
  m.set_shm_name(ours);
  m.set_shm_size(8);  // inline bytes in a shm batch, or a missing segment
  EXPECT_FALSE(DecodeMinibatch(std::make_shared<v1::Minibatch>(m), md).ok());
  m.set_shm_ring(true);  // a ring segment needs the stream's reader
  auto no_ring = DecodeMinibatch(std::make_shared<v1::Minibatch>(m), md);
  EXPECT_EQ(no_ring.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(no_ring.status().message().find("reads no ring"), absl::string_view::npos);
  shm::ShmRingReader ring;
  // A segment that is gone was unlinked by a server whose stream ended early: a broken stream,
  // which the trainer resumes (e2e.server_restart_resume once died of a NotFound here).
  auto missing = DecodeMinibatch(std::make_shared<v1::Minibatch>(m), md, &ring);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnavailable) << missing.status();
  EXPECT_TRUE(common::IsTransientError(missing.status()));
  EXPECT_NE(missing.status().message().find(ours), absl::string_view::npos);
  m.set_shm_ring(false);  // a one-shot segment that is gone: the same
  auto missing_one_shot = DecodeMinibatch(std::make_shared<v1::Minibatch>(m), md, &ring);
  EXPECT_EQ(missing_one_shot.status().code(), absl::StatusCode::kUnavailable)
      << missing_one_shot.status();
  m.set_shm_ring(true);
  // Names a server with this prefix could make, but not for this client's key, are refused
  // too: the server's host proof, another client's segment.
  for (const std::string& other :
       {std::string("/graphshard-12-ab-../x"), std::string("/graphshard-13-ab-s3"),
        std::string("/app-object"), std::string("/graphshard-12-ab-"),
        std::string("graphshard-12-ab-s3"), std::string("/graphshard-12-ab-host-proof"),
        shm::TaggedSegmentName("/graphshard-12-ab-3", "another-clients-key"),
        shm::TaggedSegmentName("/graphshard-13-ab-3", md.shm_key), ours + "0"}) {
    m.set_shm_name(other);
    auto refused = DecodeMinibatch(std::make_shared<v1::Minibatch>(m), md, &ring);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss) << other;
  }
}

// A link batch (proto LinkLabels): two hop-0 seeds 7 and 3, one positive 7 -> 3 and one
// negative 7 -> 7; rows are checked against the hop-0 nodes and batch_size against the edges.
v1::Minibatch LinkBatch() {
  v1::Minibatch m = ValidBatch();
  m.mutable_nodes(0)->clear_num_sampled_nodes();
  for (int64_t c : {2, 1}) m.mutable_nodes(0)->add_num_sampled_nodes(c);
  m.mutable_edges(0)->mutable_src()->set_data(common::ToBytes<int64_t>({2}));
  m.mutable_edges(0)->mutable_dst()->set_data(common::ToBytes<int64_t>({1}));
  m.mutable_edges(0)->clear_num_sampled_edges();
  m.mutable_edges(0)->add_num_sampled_edges(1);
  m.set_batch_size(2);
  v1::LinkLabels* l = m.mutable_link();
  l->set_edge_type("node__to__node");
  l->mutable_src()->set_data(common::ToBytes<int64_t>({0, 0}));
  l->mutable_dst()->set_data(common::ToBytes<int64_t>({1, 0}));
  l->mutable_label()->set_data(Floats({1, 0}));
  l->set_num_pos(1);
  return m;
}

TEST(DecodeMinibatch, ReadsAndChecksLinkLabels) {
  auto decode = [](const v1::Minibatch& m) {
    return DecodeMinibatch(std::make_shared<v1::Minibatch>(m), Homogeneous());
  };
  absl::StatusOr<MinibatchData> b = decode(LinkBatch());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->link.edge_type, "node__to__node");
  EXPECT_EQ(b->link.num_edges, 2);
  EXPECT_EQ(b->link.num_pos, 1);
  EXPECT_EQ(At(b->link.dst, 0), 1);
  v1::Minibatch m = LinkBatch();
  m.mutable_link()->mutable_dst()->set_data(common::ToBytes<int64_t>({1, 2}));
  EXPECT_THAT(decode(m).status().message(), ::testing::HasSubstr("link dst[1] = 2"))
      << "row 2 is a hop-1 node, not an endpoint";
  m = LinkBatch();
  m.mutable_link()->mutable_label()->set_data(Floats({1}));
  EXPECT_EQ(decode(m).status().code(), absl::StatusCode::kDataLoss);
  m = LinkBatch();
  m.set_batch_size(3);
  EXPECT_EQ(decode(m).status().code(), absl::StatusCode::kDataLoss);
  m = LinkBatch();
  m.mutable_link()->set_edge_type("node__likes__node");
  EXPECT_THAT(decode(m).status().message(), ::testing::HasSubstr("node__likes__node"));
}

// Per-layer trimming reads prefixes of the rows and edges (data_types.h): a batch whose hop
// counts or edges break the hop order is refused on arrival.
TEST(DecodeMinibatch, RejectsBatchesOutOfHopOrder) {
  auto decode = [](const v1::Minibatch& m) {
    return DecodeMinibatch(std::make_shared<v1::Minibatch>(m), Homogeneous());
  };
  auto expect_data_loss = [&](const v1::Minibatch& m, absl::string_view mention) {
    absl::StatusOr<MinibatchData> b = decode(m);
    ASSERT_FALSE(b.ok()) << mention;
    EXPECT_EQ(b.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(b.status().message().find(mention), absl::string_view::npos) << b.status().message();
  };
  absl::StatusOr<MinibatchData> good = decode(TwoHopBatch());
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->nodes[0].num_sampled_nodes, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(good->edges[0].num_sampled_edges, (std::vector<int64_t>{1, 1}));

  v1::Minibatch m = TwoHopBatch();
  m.mutable_nodes(0)->clear_num_sampled_nodes();
  expect_data_loss(m, "no num_sampled_nodes");
  m = TwoHopBatch();
  m.mutable_nodes(0)->set_num_sampled_nodes(2, 2);  // 1 + 1 + 2 rows of 3
  expect_data_loss(m, "does not fit the 3 rows");
  m = TwoHopBatch();
  m.mutable_nodes(0)->set_num_sampled_nodes(0, 2);  // the seeds are hop 0: batch_size of them
  m.mutable_nodes(0)->set_num_sampled_nodes(1, 0);
  expect_data_loss(m, "at hop 0");
  m = TwoHopBatch();
  m.mutable_edges(0)->add_num_sampled_edges(0);  // three hops of edges, two of nodes
  expect_data_loss(m, "expected 2");
  m = TwoHopBatch();
  m.mutable_edges(0)->set_num_sampled_edges(1, 0);
  expect_data_loss(m, "add up to 1, not 2");
  m = TwoHopBatch();  // hop 0 edge from a node of hop 2
  m.mutable_edges(0)->mutable_src()->set_data(common::ToBytes<int64_t>({2, 2}));
  expect_data_loss(m, "src[0] = 2 (hop 0) is outside [0, 2)");
  m = TwoHopBatch();  // hop 1 edge into the seed (hop 0)
  m.mutable_edges(0)->mutable_dst()->set_data(common::ToBytes<int64_t>({0, 0}));
  expect_data_loss(m, "dst[1] = 0 (hop 1) is outside [1, 2)");
}

TEST(DecodeMinibatch, Reads16BitFeatures) {
  v1::Minibatch m = ValidBatch();
  m.set_feature_dtype(v1::FLOAT16);
  m.mutable_nodes(0)->mutable_features()->set_data(std::string(3 * 2 * 2, '\0'));
  absl::StatusOr<MinibatchData> b =
      DecodeMinibatch(std::make_shared<v1::Minibatch>(m), Homogeneous());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->feature_dtype, FeatureDtype::kFloat16);
}

TEST(DecodeMetadata, ReadsHeterogeneousTypes) {
  v1::Metadata m;
  m.set_num_parts(1);
  m.set_num_classes(3);
  m.set_feat_dim(8);
  m.set_target_type("movie");
  for (auto [name, dim] : {std::pair{"actor", 0}, std::pair{"movie", 8}}) {
    v1::NodeTypeMeta* t = m.add_node_types();
    t->set_name(name);
    t->set_feat_dim(dim);
    t->set_num_classes(std::string(name) == "movie" ? 3 : 0);
  }
  v1::EdgeTypeMeta* e = m.add_edge_types();
  e->set_name("actor__to__movie");
  e->set_src("actor");
  e->set_dst("movie");
  absl::StatusOr<ServerMetadata> md = DecodeMetadata(m);
  ASSERT_TRUE(md.ok()) << md.status();
  EXPECT_EQ(md->target, 1);
  EXPECT_TRUE(md->heterogeneous());
  EXPECT_EQ(md->edge_types[0].src, 0);
  EXPECT_EQ(md->edge_types[0].dst, 1);
  e->set_src("nobody");
  EXPECT_FALSE(DecodeMetadata(m).ok());
}

TEST(DecodeMetadata, RejectsNonsense) {
  v1::Metadata m;
  m.set_part(2);
  m.set_num_parts(2);
  m.set_feat_dim(4);
  m.set_num_classes(3);
  EXPECT_FALSE(DecodeMetadata(m).ok());
  m.set_part(1);
  EXPECT_TRUE(DecodeMetadata(m).ok());
  m.set_num_classes(0);  // unlabelled: fine for link prediction (CheckTaskData refuses node tasks)
  EXPECT_TRUE(DecodeMetadata(m).ok());
  m.set_num_classes(-1);
  EXPECT_FALSE(DecodeMetadata(m).ok());
  m.set_num_classes(3);
  m.set_num_local_edges(7);  // the part's in-edges (ServerSet::num_edges sums them)
  EXPECT_EQ(DecodeMetadata(m)->num_local_edges, 7);
  m.set_num_local_edges(-1);
  const absl::Status negative = DecodeMetadata(m).status();
  EXPECT_EQ(negative.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(negative.message().find("num_local_edges -1"), absl::string_view::npos) << negative;
}

// A stream seeded by another node type than the target (the Python loader's input_nodes): the
// request names it, and its batches' seed block is that type's.
TEST(DecodeMinibatch, AnyNodeTypeMaySeed) {
  StreamOptions o;
  o.seeds = {5};
  o.seed_type = "actor";
  EXPECT_EQ(EncodeStreamRequest(o).seed_type(), "actor");
  v1::Metadata meta;
  meta.set_num_parts(1);
  meta.set_num_classes(3);
  meta.set_feat_dim(2);
  meta.set_target_type("movie");
  for (const char* name : {"actor", "movie"}) {
    v1::NodeTypeMeta* t = meta.add_node_types();
    t->set_name(name);
    t->set_feat_dim(std::string(name) == "movie" ? 2 : 0);
    t->set_num_classes(std::string(name) == "movie" ? 3 : 0);
  }
  v1::EdgeTypeMeta* et = meta.add_edge_types();
  et->set_name("movie__to__actor");
  et->set_src("movie");
  et->set_dst("actor");
  const ServerMetadata md = *DecodeMetadata(meta);
  // Actor 5 (the seed) and, one hop out, movie 7 -> actor 5.
  v1::Minibatch m;
  m.set_batch_size(1);
  m.set_seed_type("actor");
  v1::NodeBlock* actor = m.add_nodes();
  actor->set_node_type("actor");
  actor->mutable_ids()->set_data(common::ToBytes<int64_t>({5}));
  actor->mutable_labels()->set_data(common::ToBytes<int64_t>({-1}));
  for (int64_t c : {1, 0}) actor->add_num_sampled_nodes(c);
  v1::NodeBlock* movie = m.add_nodes();
  movie->set_node_type("movie");
  movie->mutable_ids()->set_data(common::ToBytes<int64_t>({7}));
  movie->set_feat_dim(2);
  movie->mutable_features()->set_data(Floats({1, 2}));
  movie->mutable_labels()->set_data(common::ToBytes<int64_t>({2}));
  for (int64_t c : {0, 1}) movie->add_num_sampled_nodes(c);
  v1::EdgeBlock* e = m.add_edges();
  e->set_edge_type("movie__to__actor");
  e->mutable_src()->set_data(common::ToBytes<int64_t>({0}));
  e->mutable_dst()->set_data(common::ToBytes<int64_t>({0}));
  e->add_num_sampled_edges(1);
  absl::StatusOr<MinibatchData> b = DecodeMinibatch(std::make_shared<v1::Minibatch>(m), md);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->seed_block, 0);
  EXPECT_EQ(b->batch_size, 1);
  m.set_seed_type("director");  // not a type of the graph
  b = DecodeMinibatch(std::make_shared<v1::Minibatch>(m), md);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kDataLoss) << b.status();
  m.set_seed_type("movie");  // the movie block has no seed at hop 0
  EXPECT_EQ(DecodeMinibatch(std::make_shared<v1::Minibatch>(m), md).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace graphshard::client::internal
