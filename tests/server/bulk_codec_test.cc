#include "server/bulk_codec.h"

#include <cstring>

#include <gtest/gtest.h>

namespace graphshard::server {
namespace {

// What the receiving side gets for `body`: each array copied into its own buffer.
transport::Received Receive(const transport::Body& body) {
  transport::Received r;
  for (absl::Span<const char> a : body.Arrays()) r.arrays.emplace_back(a.begin(), a.end());
  return r;
}

engine::OneHopRequest HopRequest() {
  engine::OneHopRequest r;
  r.replace = true;
  r.items.push_back({"paper__cites__paper", {1, 5, 9}, 10, 0xdeadbeefcafeULL});
  r.items.push_back({"author__writes__paper", {}, -1, 3});
  return r;
}

TEST(BulkCodecTest, OneHopRequestRoundTripsAndPointsAtTheSeeds) {
  engine::OneHopRequest want = HopRequest();
  std::unique_ptr<transport::Body> body = EncodeOneHopRequest(HopRequest());
  ASSERT_EQ(body->Arrays().size(), 3u);  // meta + one seed array per item
  EXPECT_EQ(body->Arrays()[1].size(), 3 * sizeof(int64_t));
  absl::StatusOr<engine::OneHopRequest> got = DecodeOneHopRequest(Receive(*body));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->replace, want.replace);
  ASSERT_EQ(got->items.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got->items[i].edge_type, want.items[i].edge_type);
    EXPECT_EQ(got->items[i].seeds, want.items[i].seeds);
    EXPECT_EQ(got->items[i].fanout, want.items[i].fanout);
    EXPECT_EQ(got->items[i].seed, want.items[i].seed);
  }
}

TEST(BulkCodecTest, HopResultsRoundTripAndAreChecked) {
  std::vector<engine::HopResult> want = {{{2, 0, 1}, {7, 8, 9}}, {{}, {}}};
  auto body = EncodeHopResults(want);
  absl::StatusOr<std::vector<engine::HopResult>> got = DecodeHopResults(Receive(*body), 2);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0].counts, want[0].counts);
  EXPECT_EQ((*got)[0].neighbors, want[0].neighbors);
  EXPECT_TRUE((*got)[1].counts.empty());
  // Wrong item count, counts that do not add up, a length not a multiple of 8: DataLoss.
  EXPECT_EQ(DecodeHopResults(Receive(*body), 3).status().code(), absl::StatusCode::kDataLoss);
  auto bad = EncodeHopResults({{{2, 2}, {7, 8, 9}}});
  EXPECT_EQ(DecodeHopResults(Receive(*bad), 1).status().code(), absl::StatusCode::kDataLoss);
  transport::Received cut = Receive(*EncodeHopResults(want));
  cut.arrays[1].pop_back();
  absl::Status s = DecodeHopResults(std::move(cut), 2).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("neighbors"), absl::string_view::npos) << s;
}

TEST(BulkCodecTest, GatherRequestAndFeatureBlocksRoundTrip) {
  std::vector<engine::TypedIds> items = {{"paper", {3, 4}}, {"author", {}}};
  auto req = DecodeGatherRequest(
      Receive(*EncodeGatherRequest(items, engine::FeatureDtype::kBFloat16)));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->dtype, engine::FeatureDtype::kBFloat16);
  ASSERT_EQ(req->items.size(), 2u);
  EXPECT_EQ(req->items[0].node_type, "paper");
  EXPECT_EQ(req->items[0].ids, items[0].ids);
  EXPECT_EQ(req->items[1].node_type, "author");

  engine::FeatureBlock a;
  a.feat_dim = 3;
  a.features.resize(2 * 3 * 2);
  for (size_t i = 0; i < a.features.size(); ++i) a.features[i] = static_cast<char>(i);
  a.labels = {1, -1};
  engine::FeatureBlock b;
  b.feat_dim = 5;
  std::vector<engine::FeatureBlock> blocks = {a, b};
  auto got = DecodeFeatureBlocks(Receive(*EncodeFeatureBlocks(blocks)), {2, 0},
                                 engine::FeatureDtype::kBFloat16);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0].feat_dim, 3);
  EXPECT_EQ((*got)[0].features, a.features);
  EXPECT_EQ((*got)[0].labels, a.labels);
  EXPECT_EQ((*got)[1].feat_dim, 5);
  // Rows of another width than asked (float32 bytes for a bfloat16 request): DataLoss.
  EXPECT_EQ(DecodeFeatureBlocks(Receive(*EncodeFeatureBlocks(blocks)), {2, 0},
                                engine::FeatureDtype::kFloat32)
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeFeatureBlocks(Receive(*EncodeFeatureBlocks(blocks)), {3, 0},
                                engine::FeatureDtype::kBFloat16)
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
}

TEST(BulkCodecTest, MalformedRequestsAreInvalidArgumentNamingWhat) {
  transport::Received none;
  EXPECT_EQ(DecodeOneHopRequest(none).status().code(), absl::StatusCode::kInvalidArgument);
  transport::Received r = Receive(*EncodeOneHopRequest(HopRequest()));
  r.arrays[0].resize(r.arrays[0].size() - 2);  // the last edge type's name cut short
  absl::Status s = DecodeOneHopRequest(r).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("edge type"), absl::string_view::npos) << s;
  r = Receive(*EncodeOneHopRequest(HopRequest()));
  r.arrays.pop_back();
  EXPECT_EQ(DecodeOneHopRequest(r).status().code(), absl::StatusCode::kInvalidArgument);
  r = Receive(*EncodeOneHopRequest(HopRequest()));
  r.arrays[1].push_back(0);
  s = DecodeOneHopRequest(r).status();
  EXPECT_NE(s.message().find("seeds"), absl::string_view::npos) << s;
  transport::Received g =
      Receive(*EncodeGatherRequest({{"paper", {1}}}, engine::FeatureDtype::kFloat32));
  g.arrays[0][0] = 9;  // dtype 9
  s = DecodeGatherRequest(g).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dtype 9"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace graphshard::server
