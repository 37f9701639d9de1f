#include "trainer/internal/wire.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace graphshard::trainer::internal {
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
  n->mutable_ids()->set_data(EncodeInt64s({7, 3, 9}));
  n->set_feat_dim(2);
  n->mutable_features()->set_data(Floats({1, 2, 3, 4, 5, 6}));
  n->mutable_labels()->set_data(EncodeInt64s({0, 1, 2}));
  v1::EdgeBlock* e = m.add_edges();
  e->set_edge_type("node__to__node");
  e->mutable_src()->set_data(EncodeInt64s({1, 2}));
  e->mutable_dst()->set_data(EncodeInt64s({0, 0}));
  return m;
}

TEST(DecodeMinibatch, DecodesAValidBatch) {
  v1::Minibatch m = ValidBatch();
  const std::vector<int64_t> seeds = {7};
  absl::StatusOr<MinibatchData> b = DecodeMinibatch(m, seeds);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->num_nodes(), 3);
  EXPECT_EQ(b->features, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(b->edge_src, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(b->labels[2], 2);
}

TEST(DecodeMinibatch, RejectsInconsistentBatches) {
  const std::vector<int64_t> seeds = {7};
  auto expect_data_loss = [&](v1::Minibatch m, absl::string_view mention) {
    absl::StatusOr<MinibatchData> b = DecodeMinibatch(m, seeds);
    ASSERT_FALSE(b.ok()) << mention;
    EXPECT_EQ(b.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(b.status().message().find(mention), absl::string_view::npos) << b.status().message();
  };
  v1::Minibatch m = ValidBatch();
  m.mutable_edges(0)->mutable_src()->set_data(EncodeInt64s({1, 3}));
  expect_data_loss(m, "edge_src");
  m = ValidBatch();
  m.mutable_edges(0)->mutable_dst()->set_data(EncodeInt64s({0}));
  expect_data_loss(m, "edge_dst");
  m = ValidBatch();
  m.mutable_nodes(0)->mutable_features()->set_data(Floats({1, 2, 3}));
  expect_data_loss(m, "features");
  m = ValidBatch();
  m.mutable_nodes(0)->mutable_labels()->set_data(EncodeInt64s({0}));
  expect_data_loss(m, "labels");
  m = ValidBatch();
  m.mutable_nodes(0)->mutable_ids()->set_data(EncodeInt64s({3, 7, 9}));
  expect_data_loss(m, "node_ids[0]");
  m = ValidBatch();
  m.set_batch_size(2);
  expect_data_loss(m, "batch_size");
  m = ValidBatch();
  m.mutable_nodes(0)->mutable_ids()->set_data(std::string(5, 'x'));
  expect_data_loss(m, "multiple of 8");
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
  m.set_num_classes(0);
  EXPECT_FALSE(DecodeMetadata(m).ok());
}

}  // namespace
}  // namespace graphshard::trainer::internal
