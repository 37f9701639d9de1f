// The cost budget of a request (request_cost.h), checked before any work; cancellation of a
// build; allocation failure; overflowing request fields. Engine only: Cora split in two,
// loaded in-process (InProcessPeers), built on the calling thread.

#include "server/engine/request_cost.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <new>
#include <utility>

#include "common/executor.h"
#include "partitioner/partition.h"
#include "partitioner/read_input.h"
#include "server/engine/epoch_stream.h"
#include "server/engine/minibatch_builder.h"
#include "tests/server/engine/in_process_parts.h"
#include "tests/testing/partition_fixture.h"
#include "tests/testing/source_paths.h"

namespace graphshard::engine {
namespace {

using ::testing::HasSubstr;

class RequestCostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    partitioner::OgbReadOptions read;
    read.undirected = true;
    auto graph = partitioner::ReadOgbHomogeneous(testing::SourceDir() + "/tests/data/cora", read);
    ASSERT_TRUE(graph.ok()) << graph.status();
    partitioner::PartitionOptions options;
    options.num_parts = 2;
    options.seed = 7;
    ASSERT_TRUE(partitioner::PartitionGraph(*graph, options, tmp_.Sub("p")).ok());
  }
  void Load(Limits limits = {}) {
    auto parts = testing::LoadInProcessParts(tmp_.Sub("p"), limits);
    ASSERT_TRUE(parts.ok()) << parts.status();
    parts_ = *std::move(parts);
    peers_ = parts_.Peers();
    counting_ = std::make_unique<testing::CountingPeers>(*peers_, 2);
  }
  // Budgets far above anything built here (the bound of a disjoint batch is loose).
  static Limits Unbounded() {
    Limits l;
    l.max_request_nodes = l.max_request_edges = l.max_request_bytes = int64_t{1} << 50;
    return l;
  }
  const LocalPart& local() const { return *parts_.parts[0]; }
  std::vector<int64_t> OwnSeeds(size_t n) const {
    const common::NodeShard& own = *local().part().FindNodes("node");
    std::vector<int64_t> seeds;
    for (int64_t id = own.begin; id < own.end && seeds.size() < n; ++id) seeds.push_back(id);
    return seeds;
  }

  testing::ScratchDir tmp_;
  testing::InProcessParts parts_;
  std::unique_ptr<InProcessPeers> peers_;
  std::unique_ptr<testing::CountingPeers> counting_;
};

TEST_F(RequestCostTest, ManifestRecordsTheMaxInDegree) {
  Load();
  const common::EdgeTypeInfo& info = local().part().manifest().edge_types[0];
  int64_t max_degree = 0;
  for (const auto& part : parts_.parts) {
    const common::CscView& csc = part->edge_types()[0].shard->csc;
    for (int64_t v = 0; v < csc.num_dst_nodes(); ++v) {
      max_degree = std::max(max_degree, csc.EdgeEnd(v) - csc.EdgeBegin(v));
    }
  }
  EXPECT_EQ(info.max_in_degree, max_degree);
  EXPECT_GT(max_degree, 1);
}

// The bound is an upper bound: every batch built stays within it, in every sampling mode.
TEST_F(RequestCostTest, EveryBuiltBatchStaysWithinItsBound) {
  Load(Unbounded());
  struct Mode {
    std::vector<int32_t> fanouts;
    bool replace, disjoint;
  };
  const Mode modes[] = {{{5, 3}, false, false},
                        {{-1, -1}, false, false},
                        {{-1, 4, -1}, false, true},
                        {{6, 6}, true, false},
                        {{3, -1}, true, true}};
  for (const Mode& m : modes) {
    for (size_t seeds : {1u, 17u, 300u}) {
      MinibatchRequest r;
      r.seeds = OwnSeeds(seeds);
      r.sampling.fanouts = m.fanouts;
      r.sampling.replace = m.replace;
      r.sampling.disjoint = m.disjoint;
      r.seed = 11;
      auto batch = BuildMinibatch(local(), *peers_, r);
      ASSERT_TRUE(batch.ok()) << batch.status();
      auto cost = BatchCost(local(), "", std::ssize(r.seeds), r.sampling);
      ASSERT_TRUE(cost.ok()) << cost.status();
      double nodes = 0, bytes = 0;
      for (const NodeBlock& b : batch->nodes) {
        nodes += static_cast<double>(b.ids.size());
        bytes += static_cast<double>(b.ids.size() * 16 + b.FeatureData().size());
      }
      const double edges = static_cast<double>(batch->NumSampledEdges());
      SCOPED_TRACE(::testing::Message()
                   << seeds << " seeds, disjoint " << m.disjoint << ", replace " << m.replace);
      EXPECT_LE(nodes, cost->nodes);
      EXPECT_LE(edges, cost->edges);
      EXPECT_LE(bytes + edges * 16, cost->bytes);
    }
  }
}

// An oversized request: many seeds, fanouts -1 x 8, disjoint. Refused at once, naming the budget
// and the flag, before any peer is asked.
TEST_F(RequestCostTest, SeedsBeyondTheTypesNodesNeverShrinkTheBound) {
  // More seeds than the graph has nodes (a stream's batch size, a link batch's repeated
  // endpoints): the bound only grows with the seeds, every term stays >= 0, and a budget below
  // it refuses the request.
  ASSERT_NO_FATAL_FAILURE(Load());
  SamplingConfig sampling;
  sampling.fanouts = {10, 5};
  const int64_t nodes = local().node_types()[0].book->num_nodes();
  double last_nodes = 0, last_bytes = 0;
  for (int64_t seeds : {nodes / 2, nodes, 2 * nodes, 100 * nodes}) {
    auto cost = BatchCost(local(), "", seeds, sampling);
    ASSERT_TRUE(cost.ok()) << cost.status();
    EXPECT_GE(cost->nodes, static_cast<double>(seeds)) << seeds << " seeds";
    EXPECT_GE(cost->edges, 0) << seeds << " seeds";
    EXPECT_GE(cost->nodes, last_nodes) << seeds << " seeds";
    EXPECT_GE(cost->bytes, last_bytes) << seeds << " seeds";
    last_nodes = cost->nodes;
    last_bytes = cost->bytes;
  }
  Limits limits = Unbounded();
  limits.max_request_bytes = static_cast<int64_t>(last_bytes) - 1;
  auto huge = BatchCost(local(), "", 100 * nodes, sampling);
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(CheckCost(*huge, limits, "minibatch").code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(RequestCostTest, HugeDisjointRequestIsRefusedBeforeAnyWork) {
  Load();
  MinibatchRequest r;
  r.seeds = OwnSeeds(10000);
  r.sampling.fanouts.assign(8, -1);
  r.sampling.disjoint = true;
  auto batch = BuildMinibatch(local(), *counting_, r);
  ASSERT_EQ(batch.status().code(), absl::StatusCode::kResourceExhausted) << batch.status();
  // Cora caps each tree at its 2,708 nodes: the edges or the bytes are what overflow here.
  EXPECT_THAT(batch.status().message(), HasSubstr("graphshard-server --max-request-"));
  EXPECT_THAT(batch.status().message(), HasSubstr("above the budget"));
  EXPECT_EQ(counting_->total(), 0) << "no part was asked";

  // The same sampling as a stream: refused at Start, nothing built.
  common::InlineExecutor executor;
  StreamRequest s;
  s.seeds = r.seeds;
  s.batch_size = std::ssize(r.seeds);
  s.sampling = r.sampling;
  auto stream = EpochStream::Start(local(), *counting_, executor, s, 2);
  EXPECT_EQ(stream.status().code(), absl::StatusCode::kResourceExhausted) << stream.status();
  EXPECT_EQ(counting_->total(), 0);
}

TEST_F(RequestCostTest, EachBudgetNamesItsFlag) {
  Limits limits;
  limits.max_request_edges = 100;
  Load(limits);
  MinibatchRequest r;
  r.seeds = OwnSeeds(50);
  r.sampling.fanouts = {10, 10};
  auto batch = BuildMinibatch(local(), *peers_, r);
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(batch.status().message(), HasSubstr("--max-request-edges"));

  limits = Limits{};
  limits.max_request_bytes = 1 << 20;
  Load(limits);
  std::vector<TypedIds> gather{{"node", std::vector<int64_t>(1000, OwnSeeds(1)[0])}};
  auto rows = local().GatherFeatures(gather, FeatureDtype::kFloat32);  // 1000 x 1433 floats
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(rows.status().message(), HasSubstr("--max-request-mib"));
  gather[0].ids.resize(100);  // 573 KB: within
  EXPECT_TRUE(local().GatherFeatures(gather, FeatureDtype::kFloat32).ok());
}

// A hop is counted exactly from the part's degrees: a budget of exactly its edges passes, one
// less is refused.
TEST_F(RequestCostTest, HopIsCountedExactlyFromTheDegrees) {
  Load();
  OneHopRequest hop;
  hop.items.push_back({"node__to__node", OwnSeeds(200), -1, 3});
  auto all = local().SampleOneHop(hop);
  ASSERT_TRUE(all.ok()) << all.status();
  const int64_t edges = std::ssize((*all)[0].neighbors);
  Limits limits;
  limits.max_request_edges = edges;
  Load(limits);
  EXPECT_TRUE(local().CheckHopCost(hop).ok());
  limits.max_request_edges = edges - 1;
  Load(limits);
  EXPECT_EQ(local().CheckHopCost(hop).code(), absl::StatusCode::kResourceExhausted);
  hop.items[0].seeds.push_back(-1);
  EXPECT_EQ(local().CheckHopCost(hop).code(), absl::StatusCode::kInvalidArgument)
      << "validated before any degree is read";
}

// A build asks its CancelFn between hops and inside long loops, and stops with Cancelled.
TEST_F(RequestCostTest, CancelledBuildStops) {
  Load(Unbounded());
  MinibatchRequest r;
  r.seeds = OwnSeeds(200);
  r.sampling.fanouts = {-1, -1};
  r.sampling.disjoint = true;
  std::atomic<int> asked{0};
  r.cancelled = [&asked] { return ++asked > 2; };
  auto batch = BuildMinibatch(local(), *counting_, r);
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kCancelled) << batch.status();
  EXPECT_GE(asked.load(), 3);
  r.cancelled = [] { return false; };
  EXPECT_TRUE(BuildMinibatch(local(), *counting_, r).ok());
}

// std::bad_alloc while a stream builds a batch comes back as ResourceExhausted, not a crash.
TEST_F(RequestCostTest, OutOfMemoryInAStreamIsResourceExhausted) {
  Load();
  common::InlineExecutor executor;
  StreamRequest s;
  s.seeds = OwnSeeds(64);
  s.batch_size = 16;
  s.sampling.fanouts = {4, 4};
  EpochStream::Hooks hooks;
  hooks.place_features =
      [](Minibatch&, const std::vector<size_t>&) -> absl::StatusOr<std::vector<absl::Span<char>>> {
    throw std::bad_alloc();
  };
  auto stream = EpochStream::Start(local(), *peers_, executor, s, 2, std::move(hooks));
  ASSERT_TRUE(stream.ok()) << stream.status();
  auto next = (*stream)->Next();
  EXPECT_EQ(next.status().code(), absl::StatusCode::kResourceExhausted) << next.status();
  EXPECT_THAT(next.status().message(), HasSubstr("out of memory"));
}

// Fields whose sums or products overflow int64 are refused naming the field.
TEST_F(RequestCostTest, OverflowingStreamFieldsAreInvalidArgumentNamingTheField) {
  Load();
  common::InlineExecutor executor;
  StreamRequest s;
  s.seeds = OwnSeeds(64);
  s.batch_size = 16;
  s.sampling.fanouts = {4};
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto refused = [&](StreamRequest r, absl::string_view field) {
    auto stream = EpochStream::Start(local(), *peers_, executor, std::move(r), 2);
    EXPECT_EQ(stream.status().code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(stream.status().message(), HasSubstr(field));
  };
  StreamRequest r = s;
  r.epoch = kMax;
  refused(r, "epoch");
  r.num_epochs = 2;
  r.epoch = kMax - 1;
  refused(r, "epoch");
  r = s;
  r.epoch = -1;
  refused(r, "epoch");
  r = s;
  r.num_batches = kMax;
  refused(r, "num_batches");
  r = s;
  r.num_batches = kMax / 16 + 1;
  refused(r, "num_batches");
  r = s;
  r.epoch = kMax - 1;  // the last epoch that fits
  auto stream = EpochStream::Start(local(), *peers_, executor, r, 2);
  ASSERT_TRUE(stream.ok()) << stream.status();
  auto first = (*stream)->Next();
  EXPECT_TRUE(first.ok()) << first.status();
}

}  // namespace
}  // namespace graphshard::engine
