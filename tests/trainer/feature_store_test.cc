// The trainer's tiered feature store (--feature-store device) against real in-process
// partition servers on Cora (tests/server/test_cluster.h), on the CPU: the rows it gathers for
// a batch's ids are the rows the servers stream with that batch, byte for byte, in float32 and
// float16, whether every row is in the device tier or the rows are spread over all three
// tiers (a small device tier of the hottest rows, part 0 in the host tier, part 1 remote), with
// or without a host cache of part 1's hottest rows; a server that answers the wrong shape, or
// is gone, is an error naming it.
#include "trainer/feature_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/part_directory.h"
#include "client/server_set.h"
#include "common/status_macros.h"
#include "tests/server/test_cluster.h"
#include "trainer/tensors.h"
#include "client/visit_counts.h"

namespace graphshard::trainer {
namespace {

class FeatureStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<graphshard::testing::TestCluster>(graphshard::testing::ReadCora(),
                                                                  2);
    client::DiscoveryOptions o;
    o.registry_dir = cluster_->registry_dir();
    o.server_wait_s = 10;
    auto set = client::ConnectServers(o);
    ASSERT_TRUE(set.ok()) << set.status();
    servers_ = std::make_unique<client::ServerSet>(*std::move(set));
  }
  client::ClientOf ClientOf() {
    return [this](int p) -> absl::StatusOr<client::PartitionClient*> {
      return servers_->clients[static_cast<size_t>(p)];
    };
  }
  // Every row in the device tier.
  absl::StatusOr<std::unique_ptr<FeatureStore>> Load(client::FeatureDtype dtype) {
    FeatureStoreOptions o;
    o.dtype = dtype;
    o.rows_per_call = 500;  // several calls a part
    return FeatureStore::Load(servers_->metadata, ClientOf(), o);
  }
  // A device tier of `cache_bytes` ranked by `hotness`, part 0 in the host tier, part 1 remote.
  // `host_cache_bytes` of part 1's hottest other rows in the host tier too.
  absl::StatusOr<std::unique_ptr<FeatureStore>> LoadTiered(client::FeatureDtype dtype,
                                                           int64_t cache_bytes,
                                                           const client::VisitCounts& hotness,
                                                           int64_t host_cache_bytes = 0,
                                                           std::vector<bool> host_parts = {true,
                                                                                           false}) {
    FeatureStoreOptions o;
    o.dtype = dtype;
    o.rows_per_call = 500;
    o.device_cache_bytes = cache_bytes;
    o.host_cache_bytes = host_cache_bytes;
    o.host_parts = std::move(host_parts);
    o.hotness = &hotness;
    return FeatureStore::Load(servers_->metadata, ClientOf(), o);
  }
  // The first `n` batches of part `part`'s training seeds, as streamed.
  std::vector<client::MinibatchData> Batches(int part, int n, client::FeatureDtype dtype) {
    client::PartitionClient& client = *servers_->clients[static_cast<size_t>(part)];
    client::StreamOptions so;
    auto seeds = client.GetSplit("train");
    EXPECT_TRUE(seeds.ok()) << seeds.status();
    so.seeds = *seeds;
    so.batch_size = 32;
    so.num_batches = n;
    so.fanouts = {5, 5};
    so.feature_dtype = dtype;
    auto stream = client.StreamBatches(so, servers_->metadata);
    EXPECT_TRUE(stream.ok()) << stream.status();
    std::vector<client::MinibatchData> out;
    for (int b = 0; b < n; ++b) {
      absl::StatusOr<absl::optional<client::MinibatchData>> data = (*stream)->Next();
      EXPECT_TRUE(data.ok() && data->has_value()) << data.status();
      out.push_back(**std::move(data));
    }
    return out;
  }
  // The store's rows for every batch equal the batch's own rows; adds its tiers' counts.
  void ExpectBatchRows(const FeatureStore& store, client::FeatureDtype dtype,
                       client::FeatureTierCounts* tiers) {
    for (int part = 0; part < 2; ++part) {
      int b = 0;
      for (const client::MinibatchData& data : Batches(part, 3, dtype)) {
        absl::StatusOr<BatchTensors> x = ToTensors(data, 0);
        ASSERT_TRUE(x.ok()) << x.status();
        const client::NodeBlockData& n = data.nodes[0];
        torch::Tensor ids = torch::from_blob(const_cast<char*>(n.ids.data), {n.num_nodes},
                                             torch::kInt64).clone();
        absl::StatusOr<torch::Tensor> rows = store.Rows(0, ids, tiers);
        ASSERT_TRUE(rows.ok()) << rows.status();
        ASSERT_EQ(rows->sizes(), x->x[0].sizes());
        EXPECT_EQ(rows->scalar_type(), x->x[0].scalar_type());
        EXPECT_TRUE(torch::equal(*rows, x->x[0])) << "part " << part << " batch " << b++;
      }
    }
  }

  std::unique_ptr<graphshard::testing::TestCluster> cluster_;
  std::unique_ptr<client::ServerSet> servers_;
};

TEST_F(FeatureStoreTest, GatheredRowsAreTheRowsTheServersStream) {
  for (client::FeatureDtype dtype :
       {client::FeatureDtype::kFloat32, client::FeatureDtype::kFloat16}) {
    absl::StatusOr<std::unique_ptr<FeatureStore>> store = Load(dtype);
    ASSERT_TRUE(store.ok()) << store.status();
    const client::NodeTypeInfo& t = servers_->metadata.node_types[0];
    EXPECT_EQ((*store)->bytes(), t.num_nodes * t.feat_dim * client::FeatureBytes(dtype));
    client::FeatureTierCounts tiers;
    ExpectBatchRows(**store, dtype, &tiers);
    EXPECT_GT(tiers.device_rows, 0);
    EXPECT_EQ(tiers.host_rows + tiers.remote_rows, 0);
  }
}

// A device tier far smaller than the table, the hottest rows of the batches counted first;
// part 0's other rows in the host tier, part 1's fetched by id: the same rows, from all three.
TEST_F(FeatureStoreTest, RowsSpreadOverThreeTiersAreTheRowsTheServersStream) {
  const client::NodeTypeInfo& t = servers_->metadata.node_types[0];
  for (client::FeatureDtype dtype :
       {client::FeatureDtype::kFloat32, client::FeatureDtype::kFloat16}) {
    client::VisitCounts hotness(servers_->metadata);
    for (int part = 0; part < 2; ++part) {
      for (const client::MinibatchData& b : Batches(part, 3, dtype)) hotness.Add(b);
    }
    const int64_t row_bytes = t.feat_dim * client::FeatureBytes(dtype);
    const int64_t map_bytes = t.num_nodes * 4;
    const int64_t cached = 100;
    absl::StatusOr<std::unique_ptr<FeatureStore>> store =
        LoadTiered(dtype, map_bytes + cached * row_bytes, hotness);
    ASSERT_TRUE(store.ok()) << store.status();
    const client::FeatureStoreLayout& l = (*store)->layout();
    EXPECT_EQ(l.device_rows, cached);
    EXPECT_EQ(l.device_bytes, map_bytes + cached * row_bytes);
    EXPECT_EQ(l.device_rows + l.host_rows + l.remote_rows, t.num_nodes);
    EXPECT_EQ(l.host_bytes, t.part_offsets[1] * row_bytes);  // every row of part 0
    EXPECT_GT(l.expected_device_hit_rate, 0);
    EXPECT_LT(l.expected_device_hit_rate, 1);
    client::FeatureTierCounts tiers;
    ExpectBatchRows(**store, dtype, &tiers);
    EXPECT_GT(tiers.device_rows, 0);
    EXPECT_GT(tiers.host_rows, 0);
    EXPECT_GT(tiers.remote_rows, 0);
    EXPECT_EQ(tiers.network_bytes, tiers.remote_rows * static_cast<double>(row_bytes));
    EXPECT_EQ(tiers.pcie_bytes, 0);  // a CPU store
    // No device tier at all: every row from the host or its server, still the same rows.
    absl::StatusOr<std::unique_ptr<FeatureStore>> none = LoadTiered(dtype, 0, hotness);
    ASSERT_TRUE(none.ok()) << none.status();
    client::FeatureTierCounts no_cache;
    ExpectBatchRows(**none, dtype, &no_cache);
    EXPECT_EQ(no_cache.device_rows, 0);
    EXPECT_GT(no_cache.host_rows, 0);
    EXPECT_GT(no_cache.remote_rows, 0);
  }
}

// The host cache: other parts' hottest rows outside the device tier, fetched once and read as
// host rows; the same rows, and only those it lacks fetched per batch.
TEST_F(FeatureStoreTest, AHostCacheOfOtherPartsRowsGivesTheSameRowsWithFewerFetched) {
  const client::NodeTypeInfo& t = servers_->metadata.node_types[0];
  const client::FeatureDtype dtype = client::FeatureDtype::kFloat32;
  client::VisitCounts hotness(servers_->metadata);
  for (int part = 0; part < 2; ++part) {
    for (const client::MinibatchData& b : Batches(part, 3, dtype)) hotness.Add(b);
  }
  const int64_t row_bytes = t.feat_dim * client::FeatureBytes(dtype);
  const int64_t device = t.num_nodes * 4 + 100 * row_bytes;  // the map and 100 rows
  const int64_t part0 = t.part_offsets[1];
  client::FeatureTierCounts uncached;
  absl::StatusOr<std::unique_ptr<FeatureStore>> plain = LoadTiered(dtype, device, hotness);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ExpectBatchRows(**plain, dtype, &uncached);
  ASSERT_GT(uncached.remote_rows, 0);

  const int64_t cached = 150;
  absl::StatusOr<std::unique_ptr<FeatureStore>> store =
      LoadTiered(dtype, device, hotness, cached * row_bytes + row_bytes / 2);
  ASSERT_TRUE(store.ok()) << store.status();
  const client::FeatureStoreLayout& l = (*store)->layout();
  EXPECT_EQ(l.host_cached_rows, cached);
  EXPECT_EQ(l.host_bytes, (part0 + cached) * row_bytes);
  EXPECT_EQ(l.device_rows + l.host_rows + l.remote_rows, t.num_nodes);
  EXPECT_EQ(l.remote_rows, (*plain)->layout().remote_rows - cached);
  client::FeatureTierCounts tiers;
  ExpectBatchRows(**store, dtype, &tiers);
  EXPECT_EQ(tiers.device_rows, uncached.device_rows);  // the device tier is the same
  EXPECT_GT(tiers.remote_rows, 0);
  EXPECT_LT(tiers.remote_rows, uncached.remote_rows);  // the hottest remote rows now at home
  EXPECT_EQ(tiers.remote_rows + tiers.host_rows, uncached.remote_rows + uncached.host_rows);

  // Room for every other row, no host parts (--host-tier none --host-cache-mib N): nothing is
  // fetched per batch.
  absl::StatusOr<std::unique_ptr<FeatureStore>> all =
      LoadTiered(dtype, device, hotness, t.num_nodes * row_bytes, {false, false});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)->layout().remote_rows, 0);
  EXPECT_EQ((*all)->layout().host_cached_rows, t.num_nodes - 100);
  client::FeatureTierCounts none_fetched;
  ExpectBatchRows(**all, dtype, &none_fetched);
  EXPECT_EQ(none_fetched.remote_rows, 0);
  EXPECT_EQ(none_fetched.network_bytes, 0);
  EXPECT_GT(none_fetched.host_rows, 0);
}

// The host cache is fetched at load from the other part's server: that server gone is an
// error naming its part, not a store with holes.
TEST_F(FeatureStoreTest, AHostCacheWhoseServerIsGoneIsAnErrorNamingIt) {
  const client::NodeTypeInfo& t = servers_->metadata.node_types[0];
  client::VisitCounts hotness(servers_->metadata);
  for (int part = 0; part < 2; ++part) {
    for (const client::MinibatchData& b : Batches(part, 3, client::FeatureDtype::kFloat32)) {
      hotness.Add(b);
    }
  }
  cluster_->server(1).Shutdown(absl::Seconds(1));
  absl::StatusOr<std::unique_ptr<FeatureStore>> store =
      LoadTiered(client::FeatureDtype::kFloat32, 0, hotness, t.num_nodes * t.feat_dim * 4);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), "part 1")) << store.status();
}

// A budget below the table needs the visit counts that rank its rows.
TEST_F(FeatureStoreTest, APartialDeviceTierWithoutVisitCountsIsRefused) {
  FeatureStoreOptions o;
  o.device_cache_bytes = 1000;
  absl::StatusOr<std::unique_ptr<FeatureStore>> store =
      FeatureStore::Load(servers_->metadata, ClientOf(), o);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << store.status();
}

TEST_F(FeatureStoreTest, AWrongAnswerOrAGoneServerIsAnErrorNamingIt) {
  client::PartitionClient& client = *servers_->clients[1];
  const client::NodeTypeInfo& t = servers_->metadata.node_types[0];
  const int64_t first = t.part_offsets[1];
  // Asked for rows one wider than the server's: its answer does not have the asked shape.
  absl::StatusOr<std::string> wide =
      client.GatherRows(t.name, {first, first + 1}, t.feat_dim + 1, client::FeatureDtype::kFloat32);
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(wide.status().message(), "part 1")) << wide.status();
  // Part 0's ids asked of part 1: refused by the server.
  absl::StatusOr<std::string> foreign =
      client.GatherRows(t.name, {0}, t.feat_dim, client::FeatureDtype::kFloat32);
  EXPECT_FALSE(foreign.ok());
  EXPECT_TRUE(absl::StrContains(foreign.status().message(), "part 1")) << foreign.status();
  cluster_->server(1).Shutdown(absl::Seconds(1));
  absl::StatusOr<std::unique_ptr<FeatureStore>> store = Load(client::FeatureDtype::kFloat32);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), "part 1")) << store.status();
}

// A part's server gone mid-load: the call is asked again of a live replica (the registry read
// anew, as the trainer's loader does), and the rows are the same.
TEST_F(FeatureStoreTest, ALoadFailsOverToALiveReplica) {
  absl::StatusOr<std::unique_ptr<FeatureStore>> before = Load(client::FeatureDtype::kFloat32);
  ASSERT_TRUE(before.ok()) << before.status();
  server::ServerOptions so;
  so.partition_dir = cluster_->partition_dir();
  so.part = 1;
  so.replica = 1;
  so.registry_dir = cluster_->registry_dir();
  so.threads = 2;
  absl::StatusOr<std::unique_ptr<server::PartitionServer>> replica =
      server::PartitionServer::Start(so);
  ASSERT_TRUE(replica.ok()) << replica.status();
  cluster_->server(1).Shutdown(absl::Seconds(1));
  int asked_part1 = 0;
  FeatureStoreOptions options;
  options.rows_per_call = 500;
  absl::StatusOr<std::unique_ptr<FeatureStore>> after = FeatureStore::Load(
      servers_->metadata,
      [&](int p) -> absl::StatusOr<client::PartitionClient*> {
        if (p == 1 && asked_part1++ == 0) return servers_->clients[1];  // the one now gone
        ASSIGN_OR_RETURN(
            client::PartDirectory::LiveServer live,
            servers_->directory->Live(p, 0, &servers_->metadata, absl::Now() + absl::Seconds(10)));
        return live.client;
      },
      options);
  ASSERT_TRUE(after.ok()) << after.status();
  // One client per call of 500 rows, and one more for the call that found its server gone.
  const std::vector<int64_t>& off = servers_->metadata.node_types[0].part_offsets;
  EXPECT_EQ(asked_part1, (off[2] - off[1] + 499) / 500 + 1)
      << "part 1 was not asked again after its server went away";
  const torch::Tensor all = torch::arange(servers_->metadata.node_types[0].num_nodes);
  client::FeatureTierCounts tiers;
  absl::StatusOr<torch::Tensor> a = (*before)->Rows(0, all, &tiers);
  absl::StatusOr<torch::Tensor> b = (*after)->Rows(0, all, &tiers);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(torch::equal(*a, *b));
  (*replica)->Shutdown(absl::Seconds(1));
}

}  // namespace
}  // namespace graphshard::trainer
