// engine::CachedPeers over in-process parts: which rows it caches, answers byte-identical to the
// peer's for every dtype (cached rows, misses and both mixed), the 16-bit wire dtype, and a fill
// that retries a peer not answering yet and never holds up destruction.
#include "server/engine/cached_peers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

#include "absl/synchronization/notification.h"
#include "common/half.h"
#include "partitioner/generate.h"
#include "partitioner/partition.h"
#include "tests/server/engine/in_process_parts.h"

namespace graphshard::engine {
namespace {

using testing::InProcessParts;

// A small products-like graph (Gaussian features: not exactly representable in 16 bits) in 2
// random parts, loaded in-process.
class CachedPeersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    partitioner::GenerateOptions g;
    g.seed = 5;
    g.num_nodes = 600;
    g.avg_degree = 8;
    g.num_features = 12;
    g.num_classes = 4;
    auto graph = partitioner::Generate(g);
    ASSERT_TRUE(graph.ok()) << graph.status();
    partitioner::PartitionOptions po;
    po.num_parts = 2;
    po.seed = 3;
    ASSERT_TRUE(partitioner::PartitionGraph(*graph, po, tmp_.Sub("p")).ok());
    auto parts = testing::LoadInProcessParts(tmp_.Sub("p"));
    ASSERT_TRUE(parts.ok()) << parts.status();
    parts_ = *std::move(parts);
    peers_ = parts_.Peers();
  }
  const LocalPart& local() const { return *parts_.parts[0]; }
  const LocalPart& remote() const { return *parts_.parts[1]; }
  // Remote ids with in-edges from part 0, counted by brute force.
  std::map<int64_t, int64_t> RemoteInEdges() const {
    std::map<int64_t, int64_t> count;
    const common::NodeShard& own = *local().part().FindNodes("node");
    for (const EdgeType& e : local().edge_types()) {
      for (int64_t i = 0; i < e.shard->csc.num_edges(); ++i) {
        const int64_t u = e.shard->csc.Source(i);
        if (u < own.begin || u >= own.end) ++count[u];
      }
    }
    return count;
  }
  // A request mixing every remote id with in-edges, ids without, repeats, reversed order, and an
  // empty item.
  std::vector<TypedIds> MixedRequest() const {
    const common::NodeShard& r = *remote().part().FindNodes("node");
    TypedIds all{"node", {}};
    for (int64_t id = r.end - 1; id >= r.begin; --id) all.ids.push_back(id);
    for (int64_t id = r.begin; id < r.end; id += 7) all.ids.push_back(id);
    return {all, TypedIds{"node", {}}, TypedIds{"node", {r.begin, r.begin}}};
  }
  static CachedPeersOptions Options(int64_t capacity, FeatureDtype wire = FeatureDtype::kFloat32) {
    CachedPeersOptions o;
    o.capacity_bytes = capacity;
    o.wire_dtype = wire;
    o.fill_chunk_bytes = 256;  // several fill requests per part
    o.log = false;
    return o;
  }
  static std::vector<FeatureBlock> Gather(Peers& peers, int part, std::vector<TypedIds> items,
                                          FeatureDtype dtype) {
    absl::StatusOr<std::vector<FeatureBlock>> got;
    absl::Notification done;
    peers.GatherFeatures(part, std::move(items), dtype,
                         [&](Answer<std::vector<FeatureBlock>> r) {
                           got = std::move(r).Take();
                           done.Notify();
                         });
    done.WaitForNotification();
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return {};
    Flatten(*got, dtype);
    return *std::move(got);
  }
  // The cache answers with rows pointing into its rows and the peer's answer: read them as the
  // engine does (Row), flattened, so that the tests compare bytes.
  static void Flatten(std::vector<FeatureBlock>& blocks, FeatureDtype dtype) {
    for (FeatureBlock& b : blocks) {
      const int64_t row_bytes = b.feat_dim * common::FeatureBytes(dtype);
      EXPECT_TRUE(b.HasRowsOf(row_bytes));
      if (b.rows.empty()) continue;
      std::vector<char> flat;
      for (size_t j = 0; j < b.labels.size(); ++j) {
        const char* row = b.Row(static_cast<int64_t>(j), row_bytes);
        flat.insert(flat.end(), row, row + row_bytes);
      }
      b.features = std::move(flat);
      b.rows.clear();
    }
  }

  testing::ScratchDir tmp_;
  InProcessParts parts_;
  std::unique_ptr<InProcessPeers> peers_;
};

TEST_F(CachedPeersTest, ChoosesTheRemoteRowsWithTheMostInEdgesThatFitTheBudget) {
  const std::map<int64_t, int64_t> count = RemoteInEdges();
  ASSERT_GT(count.size(), 20u);
  // By brute force: sorted by count (descending), then id; as many as the budget holds.
  std::vector<std::pair<int64_t, int64_t>> order;  // (-count, id)
  for (const auto& [id, n] : count) order.push_back({-n, id});
  std::sort(order.begin(), order.end());
  const int64_t row = CacheRowBytes(12, FeatureDtype::kFloat32);
  for (int64_t rows : {int64_t{1}, int64_t{17}, std::ssize(order) / 3, std::ssize(order)}) {
    std::vector<int64_t> want;
    for (int64_t i = 0; i < rows; ++i) want.push_back(order[static_cast<size_t>(i)].second);
    std::sort(want.begin(), want.end());
    // A budget a little above `rows` rows: the rows at the boundary count go by id.
    std::vector<std::vector<TypedIds>> got =
        ChooseHotRows(local(), rows * row + row / 2, FeatureDtype::kFloat32);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_TRUE(got[0].empty()) << "part 0's own rows are never cached";
    ASSERT_EQ(got[1].size(), 1u);
    EXPECT_EQ(got[1][0].node_type, "node");
    EXPECT_EQ(got[1][0].ids, want) << rows << " rows";
  }
  EXPECT_TRUE(ChooseHotRows(local(), 0, FeatureDtype::kFloat32)[1].empty());
  // A budget beyond every candidate caches exactly the rows with in-edges.
  std::vector<std::vector<TypedIds>> all = ChooseHotRows(local(), int64_t{1} << 30, FeatureDtype::kFloat32);
  EXPECT_EQ(std::ssize(all[1][0].ids), std::ssize(count));
}

TEST_F(CachedPeersTest, AnswersAreByteIdenticalToThePeersForEveryDtype) {
  const int64_t half_budget = std::ssize(RemoteInEdges()) / 2 * CacheRowBytes(12, FeatureDtype::kFloat32);
  // Three rows (spread over the part's ids: looked up in the hash map), half the candidates
  // and all of them (a dense table over their id range).
  const int64_t three_rows = 3 * CacheRowBytes(12, FeatureDtype::kFloat32) + 1;
  for (int64_t capacity : {int64_t{0}, three_rows, half_budget, int64_t{1} << 30}) {
    CachedPeers cached(local(), *peers_, Options(capacity));
    ASSERT_TRUE(cached.WaitFilled(absl::Seconds(30)));
    for (FeatureDtype dtype :
         {FeatureDtype::kFloat32, FeatureDtype::kFloat16, FeatureDtype::kBFloat16}) {
      std::vector<TypedIds> request = MixedRequest();
      absl::StatusOr<std::vector<FeatureBlock>> want = remote().GatherFeatures(request, dtype);
      ASSERT_TRUE(want.ok()) << want.status();
      std::vector<FeatureBlock> got = Gather(cached, 1, request, dtype);
      ASSERT_EQ(got.size(), want->size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].feat_dim, (*want)[i].feat_dim);
        EXPECT_EQ(got[i].features, (*want)[i].features) << "capacity " << capacity << " item " << i;
        EXPECT_EQ(got[i].labels, (*want)[i].labels);
      }
    }
    const PeerCacheCounters c = cached.counters();
    if (capacity == 0) {
      EXPECT_EQ(c.hits, 0);
    } else {
      EXPECT_EQ(c.parts_filled, 1);
      EXPECT_GT(c.hits, 0);
      EXPECT_GT(c.misses, 0);  // remote nodes without in-edges from part 0 are never cached
      EXPECT_GT(c.bytes_saved, 0);
      EXPECT_LE(c.bytes, capacity);
    }
  }
}

// The merge of cached rows with the peer's answer is deferred: the transport's thread only hands
// the answer over; the rows are put together where it is taken.
TEST_F(CachedPeersTest, TheMergeRunsWhereTheAnswerIsTakenNotOnTheTransportThread) {
  testing::TransportLikePeers transport(*peers_);
  auto owned = std::make_unique<CachedPeers>(local(), transport, Options(int64_t{1} << 30));
  CachedPeers& cached = *owned;
  ASSERT_TRUE(cached.WaitFilled(absl::Seconds(30)));
  transport.Forget();  // the fill's answers were finished on the fill thread
  std::optional<Answer<std::vector<FeatureBlock>>> answer;
  std::thread::id called_on;
  absl::Notification called;
  const std::vector<TypedIds> request = MixedRequest();  // hits and misses
  cached.GatherFeatures(1, request, FeatureDtype::kFloat32,
                        [&](Answer<std::vector<FeatureBlock>> a) {
                          answer = std::move(a);
                          called_on = std::this_thread::get_id();
                          called.Notify();
                        });
  ASSERT_TRUE(called.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_NE(called_on, std::this_thread::get_id()) << "the transport called back inline";
  EXPECT_TRUE(transport.finished_on().empty()) << "finished before it was taken";
  absl::StatusOr<std::vector<FeatureBlock>> taken = std::move(*answer).Take();
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(transport.finished_on(), std::vector<std::thread::id>{std::this_thread::get_id()});
  EXPECT_GT(cached.counters().hits, 0);
  // The blocks point at cached rows and at the peer's answer: a copy stays valid after the
  // original blocks, the answer and the cache itself are gone.
  std::optional<std::vector<FeatureBlock>> got(*taken);
  taken = absl::UnknownError("gone");
  answer.reset();
  owned.reset();
  Flatten(*got, FeatureDtype::kFloat32);
  absl::StatusOr<std::vector<FeatureBlock>> want =
      remote().GatherFeatures(request, FeatureDtype::kFloat32);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    EXPECT_EQ((*got)[i].features, (*want)[i].features) << "item " << i;
    EXPECT_EQ((*got)[i].labels, (*want)[i].labels) << "item " << i;
  }
}

// Answers every gather with its first block cut short by one row's bytes (a buggy or hostile
// peer).
class TruncatingPeers final : public Peers {
 public:
  explicit TruncatingPeers(Peers& inner) : inner_(inner) {}
  void SampleOneHop(int part, OneHopRequest request, Callback<std::vector<HopResult>> done) override {
    inner_.SampleOneHop(part, std::move(request), std::move(done));
  }
  void GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                      Callback<std::vector<FeatureBlock>> done) override {
    inner_.GatherFeatures(part, std::move(items), dtype,
                          [done, dtype](Answer<std::vector<FeatureBlock>> a) {
                            absl::StatusOr<std::vector<FeatureBlock>> r = std::move(a).Take();
                            if (r.ok() && !r->empty() && !(*r)[0].features.empty()) {
                              const int64_t row = (*r)[0].feat_dim * common::FeatureBytes(dtype);
                              (*r)[0].features.resize((*r)[0].features.size() - row);
                            }
                            done(std::move(r));
                          });
  }

 private:
  Peers& inner_;
};

// A peer whose answer is short by a row gets DataLoss naming it, not rows read past its buffer
// (float16 peer rows for a float32 request: the cache checks and converts the peer's rows).
TEST_F(CachedPeersTest, AMalformedPeerAnswerIsDataLossNamingThePeer) {
  TruncatingPeers bad(*peers_);
  CachedPeers cached(local(), bad, Options(0, FeatureDtype::kFloat16));
  absl::StatusOr<std::vector<FeatureBlock>> got;
  absl::Notification done;
  cached.GatherFeatures(1, MixedRequest(), FeatureDtype::kFloat32,
                        [&](Answer<std::vector<FeatureBlock>> a) {
                          got = std::move(a).Take();
                          done.Notify();
                        });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
  EXPECT_NE(got.status().message().find("part 1"), absl::string_view::npos) << got.status();
}

// The cache's answers point at its rows, the peer's answer and rows converted for the request:
// copies of the blocks stay valid when the answer and the cache are gone (ASan checks the reads).
TEST_F(CachedPeersTest, CopiesOfAnswersOutliveTheAnswerAndTheCache) {
  for (FeatureDtype wire : {FeatureDtype::kFloat32, FeatureDtype::kFloat16}) {
    auto cached = std::make_unique<CachedPeers>(local(), *peers_, Options(int64_t{1} << 30, wire));
    ASSERT_TRUE(cached->WaitFilled(absl::Seconds(30)));
    const std::vector<FeatureBlock> want = Gather(*cached, 1, MixedRequest(), FeatureDtype::kFloat32);
    absl::StatusOr<std::vector<FeatureBlock>> got;
    absl::Notification done;
    cached->GatherFeatures(1, MixedRequest(), FeatureDtype::kFloat32,
                           [&](Answer<std::vector<FeatureBlock>> a) {
                             got = std::move(a).Take();
                             done.Notify();
                           });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<FeatureBlock> copy = *got;
    got = absl::UnknownError("gone");
    cached.reset();
    Flatten(copy, FeatureDtype::kFloat32);
    ASSERT_EQ(copy.size(), want.size());
    for (size_t i = 0; i < copy.size(); ++i) {
      EXPECT_EQ(copy[i].features, want[i].features) << "wire " << static_cast<int>(wire) << " item " << i;
      EXPECT_EQ(copy[i].labels, want[i].labels);
    }
  }
}

// Float32 rows asked as float16 (bfloat16) are the float32 rows rounded to that format (nearest
// even) and widened, cached or not; rows asked in a 16-bit dtype are the peer's own, never
// rounded twice.
TEST_F(CachedPeersTest, SixteenBitWireGivesFloat32RowsRoundedToIt) {
  for (auto [capacity, wire] : {std::pair{int64_t{0}, FeatureDtype::kFloat16},
                                std::pair{int64_t{1} << 30, FeatureDtype::kFloat16},
                                std::pair{int64_t{0}, FeatureDtype::kBFloat16},
                                std::pair{int64_t{1} << 30, FeatureDtype::kBFloat16}}) {
    const bool half = wire == FeatureDtype::kFloat16;
    auto rounded = [half](float x) {
      return half ? common::HalfToFloat(common::FloatToHalf(x))
                  : common::BFloat16ToFloat(common::FloatToBFloat16(x));
    };
    // Relative error at most 2^-11 (half, normal range; 2^-25 absolute below it) or 2^-8.
    const float rel = half ? 0x1p-11f : 0x1p-8f, abs = half ? 0x1p-25f : 0.0f;
    CachedPeers cached(local(), *peers_, Options(capacity, wire));
    ASSERT_TRUE(cached.WaitFilled(absl::Seconds(30)));
    std::vector<TypedIds> request = MixedRequest();
    absl::StatusOr<std::vector<FeatureBlock>> exact =
        remote().GatherFeatures(request, FeatureDtype::kFloat32);
    ASSERT_TRUE(exact.ok());
    std::vector<FeatureBlock> got = Gather(cached, 1, request, FeatureDtype::kFloat32);
    ASSERT_EQ(got.size(), exact->size());
    int64_t changed = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].features.size(), (*exact)[i].features.size());
      EXPECT_EQ(got[i].labels, (*exact)[i].labels);
      for (size_t j = 0; j < got[i].features.size(); j += 4) {
        float x, y;
        std::memcpy(&x, (*exact)[i].features.data() + j, 4);
        std::memcpy(&y, got[i].features.data() + j, 4);
        EXPECT_EQ(y, rounded(x));
        EXPECT_LE(std::fabs(y - x), std::max(std::fabs(x) * rel, abs)) << x;
        changed += x != y ? 1 : 0;
      }
    }
    EXPECT_GT(changed, 0) << "the features should not all be representable in 16 bits";
    for (FeatureDtype dtype : {FeatureDtype::kFloat16, FeatureDtype::kBFloat16}) {
      absl::StatusOr<std::vector<FeatureBlock>> want = remote().GatherFeatures(request, dtype);
      ASSERT_TRUE(want.ok());
      std::vector<FeatureBlock> same = Gather(cached, 1, request, dtype);
      ASSERT_EQ(same.size(), want->size());
      for (size_t i = 0; i < same.size(); ++i) EXPECT_EQ(same[i].features, (*want)[i].features);
    }
  }
}

// Fails the first `failures` gathers with Unavailable, then forwards; or, with `hold`, keeps
// every callback unanswered (a peer that never answers).
class FlakyPeers final : public Peers {
 public:
  FlakyPeers(Peers& inner, int failures, bool hold) : inner_(inner), failures_(failures), hold_(hold) {}
  void SampleOneHop(int part, OneHopRequest request, Callback<std::vector<HopResult>> done) override {
    inner_.SampleOneHop(part, std::move(request), std::move(done));
  }
  void GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                      Callback<std::vector<FeatureBlock>> done) override {
    absl::MutexLock lock(&mu_);
    ++calls_;
    if (hold_) {
      held_.push_back(std::move(done));
      return;
    }
    if (failures_ > 0) {
      --failures_;
      done(absl::UnavailableError("peer part 1 is not up yet"));
      return;
    }
    inner_.GatherFeatures(part, std::move(items), dtype, std::move(done));
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  // Answers the held callbacks (after the cache is gone: they must still be safe to call).
  void AnswerHeld() {
    std::vector<Callback<std::vector<FeatureBlock>>> held;
    {
      absl::MutexLock lock(&mu_);
      held.swap(held_);
    }
    for (auto& done : held) done(absl::UnavailableError("late"));
  }

 private:
  Peers& inner_;
  absl::Mutex mu_;
  int failures_;
  bool hold_;
  int calls_ = 0;
  std::vector<Callback<std::vector<FeatureBlock>>> held_;
};

TEST_F(CachedPeersTest, FillRetriesAPeerThatIsNotUpYet) {
  FlakyPeers flaky(*peers_, 3, false);
  CachedPeersOptions o = Options(int64_t{1} << 30);
  o.retry_min = absl::Milliseconds(1);
  o.retry_max = absl::Milliseconds(20);
  CachedPeers cached(local(), flaky, o);
  ASSERT_TRUE(cached.WaitFilled(absl::Seconds(30)));
  EXPECT_GT(flaky.calls(), 3);
  const PeerCacheCounters c = cached.counters();
  EXPECT_EQ(c.parts_filled, 1);
  EXPECT_EQ(c.parts_pending, 0);
  EXPECT_EQ(c.rows, std::ssize(RemoteInEdges()));
}

TEST_F(CachedPeersTest, APeerThatNeverAnswersDoesNotHoldUpDestruction) {
  FlakyPeers silent(*peers_, 0, true);
  {
    CachedPeers cached(local(), silent, Options(int64_t{1} << 30));
    EXPECT_FALSE(cached.WaitFilled(absl::Milliseconds(200)));
    EXPECT_EQ(cached.counters().parts_pending, 1);
    EXPECT_GE(silent.calls(), 1);
  }  // the destructor stops the fill without its answer (fill_timeout is 60 s)
  silent.AnswerHeld();
}

}  // namespace
}  // namespace graphshard::engine
