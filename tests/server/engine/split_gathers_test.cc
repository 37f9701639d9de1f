// engine::SplitGathers over in-process parts: a large GatherFeatures is asked in pieces no larger
// than the piece size and answered row for row as the whole request is (several items, an empty
// one, repeats, answers arriving on other threads); small requests and unknown types go whole;
// a failing or malformed piece is the answer's error.
#include "server/engine/split_gathers.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "partitioner/generate.h"
#include "partitioner/partition.h"
#include "tests/server/engine/in_process_parts.h"

namespace graphshard::engine {
namespace {

using testing::CountingPeers;
using testing::InProcessParts;
using testing::TransportLikePeers;

// Records the feature bytes each GatherFeatures asks for; can answer one request (by arrival
// order) with its last label dropped.
class RecordingPeers final : public ForwardingPeers {
 public:
  RecordingPeers(Peers& inner, int64_t row_bytes) : ForwardingPeers(inner), row_bytes_(row_bytes) {}
  void TruncateRequest(int n) { truncate_ = n; }
  std::vector<int64_t> asked_bytes() {
    absl::MutexLock lock(&mu_);
    return asked_;
  }
  void GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                      Callback<std::vector<FeatureBlock>> done) override {
    int64_t bytes = 0;
    for (const TypedIds& t : items) bytes += std::ssize(t.ids) * row_bytes_;
    int n = 0;
    {
      absl::MutexLock lock(&mu_);
      n = static_cast<int>(asked_.size());
      asked_.push_back(bytes);
    }
    if (n != truncate_) return inner_.GatherFeatures(part, std::move(items), dtype, done);
    inner_.GatherFeatures(part, std::move(items), dtype,
                          [done](Answer<std::vector<FeatureBlock>> a) {
                            absl::StatusOr<std::vector<FeatureBlock>> got = std::move(a).Take();
                            if (got.ok() && !got->empty() && !got->front().labels.empty())
                              got->front().labels.pop_back();
                            done(std::move(got));
                          });
  }

 private:
  const int64_t row_bytes_;
  int truncate_ = -1;
  absl::Mutex mu_;
  std::vector<int64_t> asked_ ABSL_GUARDED_BY(mu_);
};

class SplitGathersTest : public ::testing::Test {
 protected:
  static constexpr int64_t kFeatures = 12;
  static constexpr int64_t kRowBytes = kFeatures * 4 + 8;  // float32 row and label

  void SetUp() override {
    partitioner::GenerateOptions g;
    g.seed = 9;
    g.num_nodes = 800;
    g.avg_degree = 6;
    g.num_features = kFeatures;
    g.num_classes = 5;
    auto graph = partitioner::Generate(g);
    ASSERT_TRUE(graph.ok()) << graph.status();
    partitioner::PartitionOptions po;
    po.num_parts = 2;
    po.seed = 4;
    ASSERT_TRUE(partitioner::PartitionGraph(*graph, po, tmp_.Sub("p")).ok());
    auto parts = testing::LoadInProcessParts(tmp_.Sub("p"));
    ASSERT_TRUE(parts.ok()) << parts.status();
    parts_ = *std::move(parts);
    peers_ = parts_.Peers();
  }
  // Every id of part 1 backwards, an empty item, then every third id again (repeats).
  std::vector<TypedIds> Request() const {
    const common::NodeShard& r = *parts_.parts[1]->part().FindNodes("node");
    TypedIds all{"node", {}}, again{"node", {}};
    for (int64_t id = r.end - 1; id >= r.begin; --id) all.ids.push_back(id);
    for (int64_t id = r.begin; id < r.end; id += 3) again.ids.push_back(id);
    return {all, TypedIds{"node", {}}, again};
  }
  static int64_t Ids(const std::vector<TypedIds>& items) {
    int64_t n = 0;
    for (const TypedIds& t : items) n += std::ssize(t.ids);
    return n;
  }
  // The answer with every block's rows copied into `features` (as the engine reads them).
  static absl::StatusOr<std::vector<FeatureBlock>> Gather(Peers& peers,
                                                          std::vector<TypedIds> items) {
    absl::StatusOr<std::vector<FeatureBlock>> got;
    absl::Notification done;
    peers.GatherFeatures(1, std::move(items), FeatureDtype::kFloat32,
                         [&](Answer<std::vector<FeatureBlock>> r) {
                           got = std::move(r).Take();
                           done.Notify();
                         });
    done.WaitForNotification();
    if (!got.ok()) return got;
    for (FeatureBlock& b : *got) {
      const int64_t row = b.feat_dim * 4;
      EXPECT_TRUE(b.HasRowsOf(row));
      std::vector<char> flat;
      for (size_t j = 0; j < b.labels.size(); ++j) {
        const char* r = b.Row(static_cast<int64_t>(j), row);
        flat.insert(flat.end(), r, r + row);
      }
      b.features = std::move(flat);
      b.rows.clear();
      b.keep.reset();
    }
    return got;
  }
  static void ExpectSame(const std::vector<FeatureBlock>& a, const std::vector<FeatureBlock>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].feat_dim, b[i].feat_dim) << "item " << i;
      EXPECT_EQ(a[i].labels, b[i].labels) << "item " << i;
      EXPECT_EQ(a[i].features, b[i].features) << "item " << i;
    }
  }

  testing::ScratchDir tmp_;
  InProcessParts parts_;
  std::unique_ptr<InProcessPeers> peers_;
};

TEST_F(SplitGathersTest, ALargeRequestGoesInPiecesAndIsAnsweredRowForRow) {
  auto whole = Gather(*peers_, Request());
  ASSERT_TRUE(whole.ok()) << whole.status();
  const int64_t total = Ids(Request()) * kRowBytes;
  const int64_t piece = 1000;  // ~18 rows a piece
  // Answers arrive on threads of their own, as from a transport.
  TransportLikePeers transport(*peers_);
  RecordingPeers recorded(transport, kRowBytes);
  SplitGathers split(recorded, {{"node", kFeatures}}, piece);
  auto pieces = Gather(split, Request());
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  ExpectSame(*whole, *pieces);
  const std::vector<int64_t> asked = recorded.asked_bytes();
  EXPECT_GE(std::ssize(asked), total / piece);
  int64_t sum = 0;
  for (int64_t b : asked) {
    EXPECT_LE(b, piece);
    sum += b;
  }
  EXPECT_EQ(sum, total);  // every id asked once
}

TEST_F(SplitGathersTest, ASmallRequestAndAnUnknownTypeGoWhole) {
  CountingPeers counted(*peers_, 2);
  const int64_t total = Ids(Request()) * kRowBytes;
  SplitGathers large_pieces(counted, {{"node", kFeatures}}, total);
  auto whole = Gather(large_pieces, Request());
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(counted.gathers(1), 1);
  SplitGathers unknown(counted, {{"paper", kFeatures}}, 100);
  auto answered = Gather(unknown, Request());
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_EQ(counted.gathers(1), 2);
  ExpectSame(*whole, *answered);
}

TEST_F(SplitGathersTest, AFailingPieceIsTheAnswersError) {
  CountingPeers counted(*peers_, 2);
  counted.FailPart(1, absl::UnavailableError("peer part 1 at 10.0.0.2:1 went away"));
  SplitGathers split(counted, {{"node", kFeatures}}, 1000);
  auto got = Gather(split, Request());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("went away"), std::string::npos) << got.status();
  EXPECT_GT(counted.gathers(1), 1);
}

TEST_F(SplitGathersTest, AMalformedPieceIsDataLossNamingThePart) {
  RecordingPeers recorded(*peers_, kRowBytes);
  recorded.TruncateRequest(2);
  SplitGathers split(recorded, {{"node", kFeatures}}, 1000);
  auto got = Gather(split, Request());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("peer part 1"), std::string::npos) << got.status();
}

}  // namespace
}  // namespace graphshard::engine
