// StreamBatches: epoch plans, resume, concurrency, cancellation, shared memory, limits, stats,
// reflection. Real in-process servers on port 0.
#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "common/half.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "server/engine/epoch_stream.h"
#include "server/proto_convert.h"
#include "tests/server/test_cluster.h"
#include "tests/testing/wait_until.h"

namespace graphshard::server {
namespace {

using testing::Context;

class StreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graph_ = new partitioner::Graph(testing::ReadCora());
    cluster_ = new testing::TestCluster(*graph_, 2);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete graph_;
  }
  static std::vector<int64_t> Split(int part, const std::string& name) {
    v1::GetSplitRequest req;
    req.set_split(name);
    v1::GetSplitResponse resp;
    EXPECT_TRUE(cluster_->Stub(part)->GetSplit(Context().get(), req, &resp).ok());
    return *FromBytes<int64_t>(resp.ids(), "ids");
  }
  static v1::StreamBatchesRequest Request(const std::vector<int64_t>& seeds, int64_t batch_size) {
    v1::StreamBatchesRequest r;
    r.set_seeds(ToBytes<int64_t>(seeds));
    r.set_batch_size(batch_size);
    r.set_shuffle(true);
    r.set_shuffle_seed(5);
    r.set_epoch(2);
    r.mutable_sampling()->add_fanouts(5);
    r.mutable_sampling()->add_fanouts(3);
    return r;
  }
  // Reads the whole stream; the status it ended with goes to *status.
  static std::vector<v1::Minibatch> ReadAll(int part, const v1::StreamBatchesRequest& r,
                                            grpc::Status* status = nullptr) {
    auto ctx = Context();
    // A new channel's first connect can fail transiently on a loaded machine (seen once in CI,
    // "failed to connect to all addresses"); these tests check batches, not connecting: wait
    // for the connection within the deadline, as the trainer's resuming streams would retry.
    ctx->set_wait_for_ready(true);
    auto reader = cluster_->Stub(part)->StreamBatches(ctx.get(), r);
    std::vector<v1::Minibatch> out;
    v1::Minibatch m;
    while (reader->Read(&m)) out.push_back(m);
    grpc::Status s = reader->Finish();
    if (status != nullptr) *status = s;
    EXPECT_TRUE(status != nullptr || s.ok()) << s.error_message();
    return out;
  }
  static engine::StreamRequest EngineRequest(const v1::StreamBatchesRequest& r) {
    engine::StreamRequest e;
    e.seeds = *FromBytes<int64_t>(r.seeds(), "seeds");
    e.batch_size = r.batch_size();
    e.shuffle = r.shuffle();
    e.shuffle_seed = r.shuffle_seed();
    e.epoch = r.epoch();
    return e;
  }

  static partitioner::Graph* graph_;
  static testing::TestCluster* cluster_;
};

partitioner::Graph* StreamTest::graph_ = nullptr;
testing::TestCluster* StreamTest::cluster_ = nullptr;

TEST_F(StreamTest, EpochCoversEverySeedOnceInThePlannedOrder) {
  std::vector<int64_t> seeds = Split(0, "test");
  v1::StreamBatchesRequest r = Request(seeds, 64);
  std::vector<v1::Minibatch> batches = ReadAll(0, r);
  ASSERT_EQ(batches.size(), (seeds.size() + 63) / 64);
  std::vector<int64_t> shuffled = engine::ShuffledSeeds(EngineRequest(r), r.epoch());
  std::multiset<int64_t> seen;
  for (size_t b = 0; b < batches.size(); ++b) {
    testing::Decoded d = testing::Decode(batches[b]);
    EXPECT_EQ(batches[b].batch_index(), static_cast<int64_t>(b));
    std::vector<int64_t> want = engine::BatchSeeds(shuffled, 64, static_cast<int64_t>(b));
    ASSERT_EQ(d.batch_size, static_cast<int64_t>(want.size()));
    EXPECT_TRUE(std::equal(want.begin(), want.end(), d.nodes["node"].ids.begin()));
    seen.insert(want.begin(), want.end());
  }
  EXPECT_EQ(seen, std::multiset<int64_t>(seeds.begin(), seeds.end()));
  // Another epoch shuffles differently.
  r.set_epoch(3);
  std::vector<v1::Minibatch> other = ReadAll(0, r);
  EXPECT_NE(testing::Decode(other[0]).nodes["node"].ids, testing::Decode(batches[0]).nodes["node"].ids);
}

TEST_F(StreamTest, ResumedStreamYieldsTheSameBatches) {
  v1::StreamBatchesRequest r = Request(Split(1, "test"), 50);
  std::vector<v1::Minibatch> full = ReadAll(1, r);
  ASSERT_GT(full.size(), 4u);
  r.set_first_batch(3);
  std::vector<v1::Minibatch> resumed = ReadAll(1, r);
  ASSERT_EQ(resumed.size(), full.size() - 3);
  for (size_t i = 0; i < resumed.size(); ++i) {
    EXPECT_EQ(resumed[i].SerializeAsString(), full[i + 3].SerializeAsString()) << i;
  }
}

// One stream over three epochs sends what three one-epoch streams send (resumed mid-epoch
// too), each batch labelled with its epoch and index; a bad epoch count is refused.
TEST_F(StreamTest, MultiEpochStreamEqualsOneStreamPerEpoch) {
  v1::StreamBatchesRequest r = Request(Split(1, "test"), 50);
  r.set_num_batches(0);
  const int64_t first_epoch = r.epoch();
  std::vector<v1::Minibatch> per_epoch;
  for (int64_t e = first_epoch; e < first_epoch + 3; ++e) {
    v1::StreamBatchesRequest one = r;
    one.set_epoch(e);
    for (v1::Minibatch& m : ReadAll(1, one)) per_epoch.push_back(std::move(m));
  }
  const size_t natural = per_epoch.size() / 3;
  ASSERT_GT(natural, 2u);
  v1::StreamBatchesRequest multi = r;
  multi.set_num_epochs(3);
  multi.set_first_batch(2);
  std::vector<v1::Minibatch> got = ReadAll(1, multi);
  ASSERT_EQ(got.size(), per_epoch.size() - 2);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].SerializeAsString(), per_epoch[i + 2].SerializeAsString()) << i;
    EXPECT_EQ(got[i].epoch(), first_epoch + static_cast<int64_t>((i + 2) / natural)) << i;
    EXPECT_EQ(got[i].batch_index(), static_cast<int64_t>((i + 2) % natural)) << i;
  }
  // Epochs shuffle differently, so the stream is not one epoch repeated.
  EXPECT_NE(got[natural - 2].SerializeAsString(), got[2 * natural - 2].SerializeAsString());
  multi.set_num_epochs(-1);
  grpc::Status status;
  EXPECT_TRUE(ReadAll(1, multi, &status).empty());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("num_epochs -1"), std::string::npos)
      << status.error_message();
  multi.set_num_epochs(1 << 20);
  multi.set_num_batches(int64_t{1} << 50);
  EXPECT_TRUE(ReadAll(1, multi, &status).empty());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("too many batches"), std::string::npos)
      << status.error_message();
}

TEST_F(StreamTest, ExtraBatchesWrapAroundWithFullSize) {
  std::vector<int64_t> seeds = Split(0, "val");
  v1::StreamBatchesRequest r = Request(seeds, 100);
  const int64_t natural = (static_cast<int64_t>(seeds.size()) + 99) / 100;
  r.set_num_batches(natural + 2);
  std::vector<v1::Minibatch> batches = ReadAll(0, r);
  ASSERT_EQ(static_cast<int64_t>(batches.size()), natural + 2);
  EXPECT_EQ(batches.back().batch_size(), 100);
}

// A streamed batch equals the unary SampleMinibatch of the same seeds and sampling seed, for 4
// streams at once on 2 servers.
TEST_F(StreamTest, FourConcurrentStreamsGiveCorrectDistinctBatches) {
  std::vector<std::vector<int64_t>> shards;
  for (int part : {0, 1}) {
    std::vector<int64_t> test = Split(part, "test");
    size_t half = test.size() / 2;
    shards.emplace_back(test.begin(), test.begin() + half);
    shards.emplace_back(test.begin() + half, test.end());
  }
  std::vector<std::vector<v1::Minibatch>> got(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { got[i] = ReadAll(i / 2, Request(shards[i], 40)); });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> distinct;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(got[i].size(), (shards[i].size() + 39) / 40);
    engine::StreamRequest plan = EngineRequest(Request(shards[i], 40));
    std::vector<int64_t> shuffled = engine::ShuffledSeeds(plan, plan.epoch);
    for (size_t b = 0; b < got[i].size(); ++b) {
      v1::SampleMinibatchRequest unary;
      unary.set_seeds(ToBytes<int64_t>(engine::BatchSeeds(shuffled, 40, static_cast<int64_t>(b))));
      *unary.mutable_sampling() = Request(shards[i], 40).sampling();
      unary.set_seed(engine::BatchSamplingSeed(plan, plan.epoch, static_cast<int64_t>(b)));
      v1::Minibatch want;
      ASSERT_TRUE(cluster_->Stub(i / 2)->SampleMinibatch(Context().get(), unary, &want).ok());
      want.set_batch_index(static_cast<int64_t>(b));
      want.set_epoch(2);
      EXPECT_EQ(got[i][b].SerializeAsString(), want.SerializeAsString()) << i << " " << b;
      distinct.insert(got[i][b].SerializeAsString());
    }
  }
  size_t total = 0;
  for (const auto& g : got) total += g.size();
  EXPECT_EQ(distinct.size(), total);
}

int CountShmSegments() {
  int n = 0;
  const std::string prefix = "graphshard-" + std::to_string(::getpid()) + "-";
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  // The servers' same-host proofs (shm/host_proof.h) live as long as the servers: not counted.
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    n += name.rfind(prefix, 0) == 0 && !name.ends_with("host-proof");
  }
  ::closedir(dir);
  return n;
}

// Mappings of this process's segments (servers and clients here).
int CountMappedShm() {
  std::ifstream maps("/proc/self/maps");
  const std::string prefix = "/dev/shm/graphshard-" + std::to_string(::getpid()) + "-";
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find(prefix) != std::string::npos;
  return n;
}

TEST_F(StreamTest, SharedMemoryBatchesEqualInlineBatches) {
  v1::StreamBatchesRequest r = Request(Split(0, "test"), 128);
  std::vector<v1::Minibatch> inline_batches = ReadAll(0, r);
  testing::SetSameHost(*cluster_->Stub(0), r);
  std::vector<v1::Minibatch> shm_batches = ReadAll(0, r);
  ASSERT_EQ(shm_batches.size(), inline_batches.size());
  for (size_t i = 0; i < shm_batches.size(); ++i) {
    ASSERT_FALSE(shm_batches[i].shm_name().empty());
    EXPECT_TRUE(shm_batches[i].nodes(0).features().data().empty());
    testing::Decoded a = testing::Decode(shm_batches[i]);  // maps and unlinks
    testing::Decoded b = testing::Decode(inline_batches[i]);
    EXPECT_EQ(a.nodes["node"].ids, b.nodes["node"].ids);
    EXPECT_EQ(a.nodes["node"].features, b.nodes["node"].features);
    EXPECT_EQ(a.nodes["node"].labels, b.nodes["node"].labels);
    EXPECT_EQ(a.nodes["node"].num_sampled, b.nodes["node"].num_sampled);
    EXPECT_EQ(a.edges["node__to__node"].src, b.edges["node__to__node"].src);
    EXPECT_EQ(a.edges["node__to__node"].dst, b.edges["node__to__node"].dst);
  }
  EXPECT_EQ(CountShmSegments(), 0) << "the client unlinked every segment it mapped";
}

// --feature-store device: the same batches without rows (features_omitted, seeds' labels
// only), inline and in shared-memory segments sized for them.
TEST_F(StreamTest, BatchesWithoutFeaturesAreTheSameBatchesWithoutRowsInlineAndInSharedMemory) {
  v1::StreamBatchesRequest r = Request(Split(0, "test"), 128);
  std::vector<v1::Minibatch> full = ReadAll(0, r);
  r.mutable_sampling()->set_without_features(true);
  std::vector<v1::Minibatch> lean = ReadAll(0, r);
  testing::SetSameHost(*cluster_->Stub(0), r);
  std::vector<v1::Minibatch> lean_shm = ReadAll(0, r);
  ASSERT_EQ(lean.size(), full.size());
  ASSERT_EQ(lean_shm.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_FALSE(full[i].features_omitted());
    EXPECT_TRUE(lean[i].features_omitted());
    EXPECT_TRUE(lean_shm[i].features_omitted());
    ASSERT_FALSE(lean_shm[i].shm_name().empty());
    testing::Decoded a = testing::Decode(lean[i]);
    testing::Decoded b = testing::Decode(full[i]);
    testing::Decoded c = testing::Decode(lean_shm[i]);  // maps and unlinks
    EXPECT_EQ(a.nodes["node"].ids, b.nodes["node"].ids);
    EXPECT_EQ(c.nodes["node"].ids, b.nodes["node"].ids);
    EXPECT_TRUE(a.nodes["node"].features.empty());
    EXPECT_TRUE(c.nodes["node"].features.empty());
    EXPECT_FALSE(b.nodes["node"].features.empty());
    const int64_t seeds = full[i].batch_size();
    const std::vector<int64_t>& labels = b.nodes["node"].labels;
    ASSERT_EQ(a.nodes["node"].labels.size(), labels.size());
    for (size_t j = 0; j < labels.size(); ++j) {
      const int64_t want = static_cast<int64_t>(j) < seeds ? labels[j] : -1;
      EXPECT_EQ(a.nodes["node"].labels[j], want) << "batch " << i << " row " << j;
      EXPECT_EQ(c.nodes["node"].labels[j], want) << "batch " << i << " row " << j;
    }
    EXPECT_EQ(a.edges["node__to__node"].src, b.edges["node__to__node"].src);
    EXPECT_EQ(c.edges["node__to__node"].dst, b.edges["node__to__node"].dst);
  }
  EXPECT_EQ(CountShmSegments(), 0) << "the client unlinked every segment it mapped";
}

// The ring ("a ring of shm segments the trainer maps"): a reader that releases each
// batch before the next gets them in reused segments, byte for byte the inline batches.
TEST_F(StreamTest, RingSegmentsAreReusedAndCarryTheInlineBatches) {
  v1::StreamBatchesRequest r = Request(Split(0, "test"), 16);
  std::vector<v1::Minibatch> inline_batches = ReadAll(0, r);
  ASSERT_GE(inline_batches.size(), 10u);
  testing::SetSameHost(*cluster_->Stub(0), r);
  r.set_shm_ring(2);  // this reader holds one batch at a time
  v1::Stats before;
  ASSERT_TRUE(cluster_->Stub(0)->GetStats(Context().get(), {}, &before).ok());
  shm::ShmRingReader ring;
  auto ctx = Context();
  auto reader = cluster_->Stub(0)->StreamBatches(ctx.get(), r);
  std::set<std::string> names;
  size_t i = 0;
  v1::Minibatch m;
  while (reader->Read(&m)) {
    ASSERT_LT(i, inline_batches.size());
    ASSERT_TRUE(m.shm_ring());
    names.insert(m.shm_name());
    testing::Decoded a = testing::Decode(m, &ring);  // released when Decode returns
    testing::Decoded b = testing::Decode(inline_batches[i++]);
    EXPECT_EQ(a.nodes["node"].ids, b.nodes["node"].ids);
    EXPECT_EQ(a.nodes["node"].features, b.nodes["node"].features);
    EXPECT_EQ(a.nodes["node"].labels, b.nodes["node"].labels);
    EXPECT_EQ(a.edges["node__to__node"].src, b.edges["node__to__node"].src);
    EXPECT_EQ(a.edges["node__to__node"].dst, b.edges["node__to__node"].dst);
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(i, inline_batches.size());
  // At most 2 sent and unreleased, plus the stream's prefetch built ahead, plus the one being
  // written: every other batch reuses a segment.
  EXPECT_LE(names.size(), 2u + ServiceOptions{}.prefetch + 1) << "segments were not reused";
  v1::Stats after;
  ASSERT_TRUE(cluster_->Stub(0)->GetStats(Context().get(), {}, &after).ok());
  EXPECT_EQ(after.shm_segments_created() - before.shm_segments_created(),
            static_cast<int64_t>(names.size()));
  EXPECT_EQ(after.shm_segments_reused() - before.shm_segments_reused(),
            static_cast<int64_t>(inline_batches.size() - names.size()));
  EXPECT_EQ(CountShmSegments(), 0) << "the reader unlinked every ring segment";
}

// A reader that pauses with batches sent but not read yet (a trainer evaluating between the
// epochs of its stream) is waited for: the server neither stalls nor makes more segments.
TEST_F(StreamTest, PausingRingReaderIsWaitedFor) {
  v1::StreamBatchesRequest r = Request(Split(0, "test"), 16);
  testing::SetSameHost(*cluster_->Stub(0), r);
  r.set_shm_ring(4);
  r.set_num_epochs(2);
  v1::Stats before;
  ASSERT_TRUE(cluster_->Stub(0)->GetStats(Context().get(), {}, &before).ok());
  shm::ShmRingReader ring;
  auto ctx = Context();
  auto reader = cluster_->Stub(0)->StreamBatches(ctx.get(), r);
  std::set<std::string> names;
  std::vector<std::shared_ptr<const shm::ShmSegment>> held;
  v1::Minibatch m;
  int64_t read = 0;
  while (reader->Read(&m)) {
    ASSERT_TRUE(m.shm_ring());
    names.insert(m.shm_name());
    auto segment = ring.Open(m.shm_name(), m.shm_size(), m.shm_ring_serial());
    ASSERT_TRUE(segment.ok()) << segment.status();
    held.push_back(*segment);
    if (++read == 2) {
      // Holds 2, the server sends 2 more that stay unread: 4 held, 2 of them unopened.
      absl::SleepFor(absl::Milliseconds(1500));
    }
    if (held.size() > 2) held.erase(held.begin());  // from now on it holds the last 2
  }
  ASSERT_TRUE(reader->Finish().ok());
  v1::Stats after;
  ASSERT_TRUE(cluster_->Stub(0)->GetStats(Context().get(), {}, &after).ok());
  EXPECT_EQ(after.shm_ring_stalls() - before.shm_ring_stalls(), 0);
  EXPECT_LE(names.size(), 4u + ServiceOptions{}.prefetch + 1) << "the ring grew while paused";
  EXPECT_GT(read, 4);
}

// A client that names its reader (shm_ring_id, as the trainer does) gets its next streams from
// the same ring: no new segment, nothing mapped again, the same bytes as inline. A second
// stream while the first still runs gets a ring of its own, and both are right; a cancelled
// stream's ring is dropped and the next stream gets a new one.
TEST_F(StreamTest, ClientRingIsKeptForItsNextStreams) {
  v1::StreamBatchesRequest r = Request(Split(0, "test"), 16);
  const std::vector<v1::Minibatch> inline_batches = ReadAll(0, r);
  ASSERT_GE(inline_batches.size(), 10u);
  testing::SetSameHost(*cluster_->Stub(0), r);
  r.set_shm_ring(2);
  r.set_shm_ring_id(1234);
  auto ring = std::make_unique<shm::ShmRingReader>();  // the client's, shared by its streams
  auto created = [&] {
    v1::Stats stats;
    EXPECT_TRUE(cluster_->Stub(0)->GetStats(Context().get(), {}, &stats).ok());
    return stats.shm_segments_created();
  };
  // Builds of streamed batches the server has finished (each fills a ring segment).
  auto builds = [&] {
    v1::Stats stats;
    EXPECT_TRUE(cluster_->Stub(0)->GetStats(Context().get(), {}, &stats).ok());
    return stats.batch_build().count();
  };
  // Reads a whole stream (optionally pausing after its first batch to run `meanwhile`, given
  // the builds count at the stream's start); returns the segment names it used.
  auto read_stream = [&](const std::function<void(int64_t)>& meanwhile) {
    const int64_t builds_at_start = builds();
    std::set<std::string> names;
    auto ctx = Context();
    auto reader = cluster_->Stub(0)->StreamBatches(ctx.get(), r);
    uint64_t serial = 0;
    size_t i = 0;
    v1::Minibatch m;
    while (reader->Read(&m)) {
      EXPECT_TRUE(m.shm_ring());
      if (serial == 0) {
        serial = m.shm_ring_serial();
        ring->Attach(serial);
      }
      EXPECT_EQ(m.shm_ring_serial(), serial) << "one ring per stream";
      names.insert(m.shm_name());
      testing::Decoded a = testing::Decode(m, ring.get());
      testing::Decoded b = testing::Decode(inline_batches.at(i++));
      EXPECT_EQ(a.nodes["node"].ids, b.nodes["node"].ids);
      EXPECT_EQ(a.nodes["node"].features, b.nodes["node"].features);
      EXPECT_EQ(a.edges["node__to__node"].src, b.edges["node__to__node"].src);
      if (i == 1 && meanwhile) meanwhile(builds_at_start);
    }
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(i, inline_batches.size());
    ring->Detach(serial);
    return names;
  };
  // A stream uses up to shm_ring + prefetch + 1 segments, depending on how far the builders
  // get ahead of the client: a pause after the first batch lets them fill the ring, so that
  // no later stream of the ring can need more than this one made. The ring is full when every
  // batch that can be built before the client reads on is built: the one read, the shm_ring
  // sent and unopened, the one the writer holds until the client opens them, and prefetch
  // more (or the whole stream, if shorter).
  const int64_t paused_builds = std::min<int64_t>(
      std::ssize(inline_batches), 1 + r.shm_ring() + 1 + ServiceOptions{}.prefetch);
  const auto fill_ring = [&](int64_t builds_at_start) {
    EXPECT_TRUE(testing::WaitUntil([&] { return builds() - builds_at_start >= paused_builds; }))
        << "the builders did not fill the ring: " << builds() - builds_at_start << " of "
        << paused_builds << " batches built";
  };
  const int64_t created_before = created();
  const std::set<std::string> first = read_stream(fill_ring);
  EXPECT_EQ(created() - created_before, std::ssize(first));
  const int64_t mapped = ring->mapped();
  const std::set<std::string> second = read_stream(nullptr);
  EXPECT_EQ(created() - created_before, std::ssize(first)) << "the second stream made segments";
  EXPECT_TRUE(std::includes(first.begin(), first.end(), second.begin(), second.end()));
  EXPECT_EQ(ring->mapped(), mapped) << "the second stream's segments were mapped again";

  // Two streams at once: the second gets a new ring, which the client keeps from then on.
  std::set<std::string> concurrent;
  // The outer stream's ring is filled first, so that the inner one's builds are its own.
  const std::set<std::string> outer = read_stream([&](int64_t builds_at_start) {
    fill_ring(builds_at_start);
    concurrent = read_stream(fill_ring);
  });
  EXPECT_TRUE(std::includes(first.begin(), first.end(), outer.begin(), outer.end()));
  for (const std::string& name : concurrent) EXPECT_FALSE(first.contains(name)) << name;
  const std::set<std::string> after = read_stream(nullptr);
  EXPECT_TRUE(std::includes(concurrent.begin(), concurrent.end(), after.begin(), after.end()));
  EXPECT_EQ(ring->mapped(), std::ssize(concurrent)) << "the older ring's segments are unmapped once another one is read";
  EXPECT_EQ(CountShmSegments(), 0) << "the reader unlinked every ring segment";

  // A cancelled stream drops the client's ring: with the reader gone, nothing is left mapped.
  {
    auto ctx = Context();
    auto reader = cluster_->Stub(0)->StreamBatches(ctx.get(), r);
    v1::Minibatch m;
    ASSERT_TRUE(reader->Read(&m));
    testing::Decode(m, ring.get());
    ctx->TryCancel();
    reader->Finish();
  }
  ring.reset();
  const bool released =
      testing::WaitUntil([] { return CountShmSegments() == 0 && CountMappedShm() == 0; });
  EXPECT_TRUE(released) << CountShmSegments() << " names, " << CountMappedShm() << " mappings left";
}

// A reader that keeps every batch (as a trainer's prefetch queue does) never sees one
// overwritten: held segments are not reused.
TEST_F(StreamTest, HeldRingBatchesAreNeverOverwritten) {
  v1::StreamBatchesRequest r = Request(Split(1, "test"), 16);
  std::vector<v1::Minibatch> inline_batches = ReadAll(1, r);
  testing::SetSameHost(*cluster_->Stub(1), r);
  r.set_shm_ring(static_cast<int32_t>(inline_batches.size()) + 1);  // holds them all
  shm::ShmRingReader ring;
  auto ctx = Context();
  auto reader = cluster_->Stub(1)->StreamBatches(ctx.get(), r);
  std::vector<std::shared_ptr<const shm::ShmSegment>> held;
  std::vector<v1::Minibatch> got;
  v1::Minibatch m;
  while (reader->Read(&m)) {
    auto lease = ring.Open(m.shm_name(), m.shm_size());
    ASSERT_TRUE(lease.ok()) << lease.status();
    held.push_back(*lease);
    got.push_back(m);
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(got.size(), inline_batches.size());
  std::set<std::string> names;
  for (size_t i = 0; i < got.size(); ++i) {
    names.insert(got[i].shm_name());
    const v1::Array& f = got[i].nodes(0).features();
    const std::string& want = inline_batches[i].nodes(0).features().data();
    ASSERT_EQ(f.shm_length(), want.size());
    EXPECT_EQ(std::memcmp(held[i]->data() + f.shm_offset(), want.data(), want.size()), 0)
        << "batch " << i << " was overwritten while held";
  }
  EXPECT_EQ(names.size(), got.size()) << "a held segment was handed out again";
}

TEST_F(StreamTest, HalfPrecisionTransportRoundsEachFeature) {
  v1::StreamBatchesRequest r = Request(Split(1, "val"), 64);
  r.mutable_sampling()->set_fanouts(0, 2);
  std::vector<v1::Minibatch> f32 = ReadAll(1, r);
  r.mutable_sampling()->set_feature_dtype(v1::FLOAT16);
  std::vector<v1::Minibatch> f16 = ReadAll(1, r);
  ASSERT_EQ(f16.size(), f32.size());
  testing::Decoded a = testing::Decode(f32[0]);
  testing::Decoded b = testing::Decode(f16[0]);
  std::vector<float> full = a.Features("node");
  const std::vector<char>& half = b.nodes["node"].features;
  ASSERT_EQ(half.size(), full.size() * 2);
  for (size_t i = 0; i < full.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, half.data() + 2 * i, 2);
    ASSERT_EQ(common::HalfToFloat(h), common::HalfToFloat(common::FloatToHalf(full[i])));
  }
}

// Mappings of this process's graphshard segments (/proc/self/maps): the servers' and ours.

TEST_F(StreamTest, CancelledStreamReleasesItsResources) {
  // One-shot segments, a ring of this stream, a client's ring (kept between its streams).
  for (auto [ring_batches, ring_id] : {std::pair{0, 0}, std::pair{2, 0}, std::pair{2, 77}}) {
    SCOPED_TRACE(ring_batches == 0 ? "one-shot" : ring_id == 0 ? "ring" : "client's ring");
    std::vector<int64_t> seeds = Split(0, "test");
    v1::StreamBatchesRequest r = Request(seeds, 8);
    testing::SetSameHost(*cluster_->Stub(0), r);
    r.set_shm_ring(ring_batches);
    r.set_shm_ring_id(static_cast<uint64_t>(ring_id));
    {
      shm::ShmRingReader ring;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      auto reader = cluster_->Stub(0)->StreamBatches(&ctx, r);
      v1::Minibatch m;
      ASSERT_TRUE(reader->Read(&m));
      testing::Decode(m, ring_batches > 0 ? &ring : nullptr);
      ctx.TryCancel();
      reader->Finish();
    }  // our own mappings are gone with the reader
    // The server notices, frees the prefetched batches, unlinks and unmaps their segments.
    const bool released = testing::WaitUntil([&] {
      v1::Stats stats;
      EXPECT_TRUE(cluster_->Stub(0)->GetStats(Context().get(), {}, &stats).ok());
      return stats.active_streams() == 0 && CountShmSegments() == 0 && CountMappedShm() == 0;
    });
    EXPECT_TRUE(released) << CountShmSegments() << " names, " << CountMappedShm() << " mappings left";
  }
}

TEST_F(StreamTest, StatsCountCallsEdgesAndBytes) {
  ReadAll(1, Request(Split(1, "val"), 64));
  v1::Stats stats;
  ASSERT_TRUE(cluster_->Stub(1)->GetStats(Context().get(), {}, &stats).ok());
  EXPECT_GT(stats.sampled_edges(), 0);
  EXPECT_GT(stats.batches_built(), 0);
  EXPECT_GT(stats.bytes_sent(), 0);
  bool found = false;
  for (const v1::RpcStats& rpc : stats.rpcs()) {
    EXPECT_LE(rpc.p50_ms(), rpc.p99_ms());
    found |= rpc.method() == "StreamBatches" && rpc.count() > 0;
  }
  EXPECT_TRUE(found);
}

TEST_F(StreamTest, ReflectionListsTheServices) {
  auto channel = grpc::CreateChannel(cluster_->server(0).address(),
                                     grpc::InsecureChannelCredentials());
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(channel);
  auto ctx = Context();
  auto stream = stub->ServerReflectionInfo(ctx.get());
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("");
  ASSERT_TRUE(stream->Write(req));
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  std::set<std::string> names;
  for (const auto& s : resp.list_services_response().service()) names.insert(s.name());
  EXPECT_TRUE(names.count("graphshard.v1.PartitionService"));
  EXPECT_TRUE(names.count("grpc.health.v1.Health"));
  stream->Finish();
}

TEST(StreamLimitsTest, EveryLimitReturnsItsStatusCode) {
  engine::Limits limits;
  limits.max_batch_size = 64;
  limits.max_fanout = 10;
  limits.max_hops = 2;
  limits.max_stream_seeds = 100;
  server::ServiceOptions service;
  service.max_streams = 1;
  service.prefetch = 1;
  testing::TestCluster cluster(testing::ReadCora(), 1, limits, service);
  v1::GetSplitRequest split;
  split.set_split("test");
  v1::GetSplitResponse ids;
  ASSERT_TRUE(cluster.Stub(0)->GetSplit(Context().get(), split, &ids).ok());
  std::vector<int64_t> seeds = *FromBytes<int64_t>(ids.ids(), "ids");
  seeds.resize(100);
  auto status_of = [&](v1::StreamBatchesRequest r) {
    auto ctx = Context();
    auto reader = cluster.Stub(0)->StreamBatches(ctx.get(), r);
    v1::Minibatch m;
    while (reader->Read(&m)) {
    }
    return reader->Finish();
  };
  auto base = [&] {
    v1::StreamBatchesRequest r;
    r.set_seeds(ToBytes<int64_t>(seeds));
    r.set_batch_size(32);
    r.mutable_sampling()->add_fanouts(5);
    return r;
  };
  EXPECT_TRUE(status_of(base()).ok());
  v1::StreamBatchesRequest r = base();
  r.set_batch_size(65);
  EXPECT_EQ(status_of(r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r = base();
  r.mutable_sampling()->set_fanouts(0, 11);
  EXPECT_EQ(status_of(r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r = base();
  for (int i = 0; i < 2; ++i) r.mutable_sampling()->add_fanouts(1);
  EXPECT_EQ(status_of(r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r = base();
  std::vector<int64_t> many = *FromBytes<int64_t>(ids.ids(), "ids");
  r.set_seeds(ToBytes<int64_t>(many));  // more than max_stream_seeds
  EXPECT_EQ(status_of(r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r = base();
  r.set_first_batch(99);
  EXPECT_EQ(status_of(r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r = base();
  r.mutable_sampling()->set_feature_dtype(static_cast<v1::FeatureDtype>(7));
  EXPECT_EQ(status_of(r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // One stream open (held after its first batch): the second is refused.
  grpc::ClientContext held;
  held.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::StreamBatchesRequest slow = base();
  slow.set_batch_size(1);
  // Far more batches than gRPC's flow-control window holds: the handler stays open (blocked in
  // Write) until the client cancels, whatever the window size.
  slow.set_num_batches(1 << 20);
  auto reader = cluster.Stub(0)->StreamBatches(&held, slow);
  v1::Minibatch m;
  ASSERT_TRUE(reader->Read(&m));
  EXPECT_EQ(status_of(base()).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  held.TryCancel();
  reader->Finish();
}

}  // namespace
}  // namespace graphshard::server
