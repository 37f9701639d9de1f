#ifndef GRAPHSHARD_TESTS_SERVER_ENGINE_IN_PROCESS_PARTS_H_
#define GRAPHSHARD_TESTS_SERVER_ENGINE_IN_PROCESS_PARTS_H_

// Test-only: every part of a partition folder as an engine::LocalPart of this process, reached
// through engine::InProcessPeers (no gRPC, no network), and a Peers wrapper that counts the
// requests each part gets and can fail one part. Plus the comparison of two minibatches.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/partition_part.h"
#include "server/engine/in_process_peers.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/engine/types.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::testing {

struct InProcessParts {
  std::vector<std::unique_ptr<engine::LocalPart>> parts;
  std::vector<int64_t> orig_of;  // global id (of the one node type "node") -> input id

  // The peers of any part: every part answered in-process.
  std::unique_ptr<engine::InProcessPeers> Peers() const {
    std::vector<const engine::LocalPart*> views;
    for (const auto& p : parts) views.push_back(p.get());
    return std::make_unique<engine::InProcessPeers>(std::move(views));
  }
};

inline absl::StatusOr<InProcessParts> LoadInProcessParts(const std::string& dir,
                                                         engine::Limits limits = {}) {
  auto manifest = common::ReadManifest(dir);
  if (!manifest.ok()) return manifest.status();
  InProcessParts out;
  for (int p = 0; p < manifest->num_parts; ++p) {
    auto part = common::PartitionPart::Load(dir, p);
    if (!part.ok()) return part.status();
    if (const common::NodeShard* nodes = (*part)->FindNodes("node")) {
      out.orig_of.resize(
          static_cast<size_t>(std::max<int64_t>(nodes->end, std::ssize(out.orig_of))));
      for (int64_t r = 0; r < nodes->num_rows(); ++r)
        out.orig_of[nodes->begin + r] = nodes->orig_ids[r];
    }
    auto local = engine::LocalPart::Create(*std::move(part), limits);
    if (!local.ok()) return local.status();
    out.parts.push_back(*std::move(local));
  }
  return out;
}

// Forwards to `inner`, counting the requests per part; requests to `failing` get `error`.
class CountingPeers final : public engine::Peers {
 public:
  CountingPeers(engine::Peers& inner, int num_parts)
      : inner_(inner), hops_(num_parts), gathers_(num_parts) {}

  void FailPart(int part, absl::Status error) {
    failing_ = part;
    error_ = std::move(error);
  }
  int hops(int part) const { return hops_[part].load(); }
  int gathers(int part) const { return gathers_[part].load(); }
  int total() const {
    int n = 0;
    for (size_t p = 0; p < hops_.size(); ++p) n += hops_[p].load() + gathers_[p].load();
    return n;
  }

  void SampleOneHop(int part, engine::OneHopRequest request,
                    Callback<std::vector<engine::HopResult>> done) override {
    ++hops_[part];
    if (part == failing_) return done(error_);
    inner_.SampleOneHop(part, std::move(request), std::move(done));
  }
  void GatherFeatures(int part, std::vector<engine::TypedIds> items, engine::FeatureDtype dtype,
                      Callback<std::vector<engine::FeatureBlock>> done) override {
    ++gathers_[part];
    if (part == failing_) return done(error_);
    inner_.GatherFeatures(part, std::move(items), dtype, std::move(done));
  }

 private:
  engine::Peers& inner_;
  std::vector<std::atomic<int>> hops_;
  std::vector<std::atomic<int>> gathers_;
  int failing_ = -1;
  absl::Status error_;
};

// Answers as a transport does: on a thread of its own (one per request), handing over a deferred
// answer; records the threads the answers were finished on (they must be the waiters', never
// the transport's: engine::Answer).
class TransportLikePeers final : public engine::Peers {
 public:
  explicit TransportLikePeers(engine::Peers& inner) : inner_(inner) {}
  ~TransportLikePeers() override {
    std::vector<std::thread> threads;
    {
      absl::MutexLock lock(&mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
  }
  void SampleOneHop(int part, engine::OneHopRequest request,
                    Callback<std::vector<engine::HopResult>> done) override {
    inner_.SampleOneHop(part, std::move(request),
                        [this, done](engine::Answer<std::vector<engine::HopResult>> a) {
                          HandOver(std::move(a), done);
                        });
  }
  void GatherFeatures(int part, std::vector<engine::TypedIds> items, engine::FeatureDtype dtype,
                      Callback<std::vector<engine::FeatureBlock>> done) override {
    inner_.GatherFeatures(part, std::move(items), dtype,
                          [this, done](engine::Answer<std::vector<engine::FeatureBlock>> a) {
                            HandOver(std::move(a), done);
                          });
  }
  std::vector<std::thread::id> finished_on() {
    absl::MutexLock lock(&mu_);
    return finished_on_;
  }
  std::vector<std::thread::id> transport_threads() {
    absl::MutexLock lock(&mu_);
    return transport_threads_;
  }
  void Forget() {
    absl::MutexLock lock(&mu_);
    finished_on_.clear();
  }

 private:
  template <typename T>
  void HandOver(engine::Answer<T> answer, Callback<T> done) {
    absl::MutexLock lock(&mu_);
    threads_.emplace_back([this, answer = std::move(answer), done]() mutable {
      {
        absl::MutexLock seen(&mu_);
        transport_threads_.push_back(std::this_thread::get_id());
      }
      done(engine::Answer<T>::Deferred([this, answer = std::move(answer)]() mutable {
        {
          absl::MutexLock seen(&mu_);
          finished_on_.push_back(std::this_thread::get_id());
        }
        return std::move(answer).Take();
      }));
    });
  }

  engine::Peers& inner_;
  absl::Mutex mu_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> finished_on_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> transport_threads_ ABSL_GUARDED_BY(mu_);
};

// TinyGraph (partition_fixture.h) written in two parts and loaded in-process; part 0's own
// nodes are own_seeds(). Requests go through counting() (CountingPeers over InProcessPeers).
class InProcessTwoPartsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteTinyPartition(tmp_.Sub("p"), 2).ok());
    auto parts = LoadInProcessParts(tmp_.Sub("p"));
    ASSERT_TRUE(parts.ok()) << parts.status();
    parts_ = *std::move(parts);
    peers_ = parts_.Peers();
    counting_ = std::make_unique<CountingPeers>(*peers_, 2);
  }
  const engine::LocalPart& local() const { return *parts_.parts[0]; }
  std::vector<int64_t> own_seeds() const {
    const common::NodeShard& own = *local().part().FindNodes("node");
    std::vector<int64_t> seeds;
    for (int64_t id = own.begin; id < own.end; ++id) seeds.push_back(id);
    return seeds;
  }

  ScratchDir tmp_;
  InProcessParts parts_;
  std::unique_ptr<engine::InProcessPeers> peers_;
  std::unique_ptr<CountingPeers> counting_;
};

// Batches are equal in everything the trainer receives (not in the cost profile).
inline void ExpectSameBatch(const engine::Minibatch& a, const engine::Minibatch& b) {
  EXPECT_EQ(a.batch_size, b.batch_size);
  EXPECT_EQ(a.seed_type, b.seed_type);
  EXPECT_EQ(a.feature_dtype, b.feature_dtype);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t t = 0; t < a.nodes.size(); ++t) {
    const engine::NodeBlock &x = a.nodes[t], &y = b.nodes[t];
    EXPECT_EQ(x.node_type, y.node_type);
    EXPECT_EQ(x.ids, y.ids) << x.node_type;
    EXPECT_EQ(x.tree, y.tree) << x.node_type;
    EXPECT_EQ(x.feat_dim, y.feat_dim) << x.node_type;
    auto fx = x.FeatureData(), fy = y.FeatureData();
    EXPECT_TRUE(std::equal(fx.begin(), fx.end(), fy.begin(), fy.end())) << x.node_type;
    EXPECT_EQ(x.labels, y.labels) << x.node_type;
    EXPECT_EQ(x.num_sampled_nodes, y.num_sampled_nodes) << x.node_type;
  }
  ASSERT_EQ(a.edges.size(), b.edges.size());
  for (size_t e = 0; e < a.edges.size(); ++e) {
    const engine::EdgeBlock &x = a.edges[e], &y = b.edges[e];
    EXPECT_EQ(x.edge_type, y.edge_type);
    EXPECT_EQ(x.src, y.src) << x.edge_type;
    EXPECT_EQ(x.dst, y.dst) << x.edge_type;
    EXPECT_EQ(x.num_sampled_edges, y.num_sampled_edges) << x.edge_type;
  }
}

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_SERVER_ENGINE_IN_PROCESS_PARTS_H_
