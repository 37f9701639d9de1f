// The trainer's device feature store (--feature-store device) against real in-process
// partition servers on Cora (tests/server/test_cluster.h), on the CPU: the rows it gathers for
// a batch's ids are the rows the servers stream with that batch, byte for byte, in float32 and
// float16; a server that answers the wrong shape, or is gone, is an error naming it.
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
  absl::StatusOr<std::unique_ptr<FeatureStore>> Load(client::FeatureDtype dtype) {
    return FeatureStore::Load(
        servers_->metadata,
        [this](int p) -> absl::StatusOr<client::PartitionClient*> {
          return servers_->clients[static_cast<size_t>(p)];
        },
        {.device = torch::kCPU, .dtype = dtype, .rows_per_call = 500});  // several calls a part
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
    for (int part = 0; part < 2; ++part) {
      client::PartitionClient& client = *servers_->clients[static_cast<size_t>(part)];
      client::StreamOptions so;
      auto seeds = client.GetSplit("train");
      ASSERT_TRUE(seeds.ok()) << seeds.status();
      so.seeds = *seeds;
      so.batch_size = 32;
      so.num_batches = 3;
      so.fanouts = {5, 5};
      so.feature_dtype = dtype;
      auto stream = client.StreamBatches(so, servers_->metadata);
      ASSERT_TRUE(stream.ok()) << stream.status();
      for (int b = 0; b < 3; ++b) {
        absl::StatusOr<absl::optional<client::MinibatchData>> data = (*stream)->Next();
        ASSERT_TRUE(data.ok()) << data.status();
        ASSERT_TRUE(data->has_value());
        absl::StatusOr<BatchTensors> x = ToTensors(**data, 0);
        ASSERT_TRUE(x.ok()) << x.status();
        const client::NodeBlockData& n = (*data)->nodes[0];
        torch::Tensor ids = torch::from_blob(const_cast<char*>(n.ids.data), {n.num_nodes},
                                             torch::kInt64).clone();
        torch::Tensor rows = (*store)->Rows(0, ids);
        ASSERT_EQ(rows.sizes(), x->x[0].sizes());
        EXPECT_EQ(rows.scalar_type(), x->x[0].scalar_type());
        EXPECT_TRUE(torch::equal(rows, x->x[0])) << "part " << part << " batch " << b;
      }
    }
  }
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
  absl::StatusOr<std::unique_ptr<FeatureStore>> after = FeatureStore::Load(
      servers_->metadata,
      [&](int p) -> absl::StatusOr<client::PartitionClient*> {
        if (p == 1 && asked_part1++ == 0) return servers_->clients[1];  // the one now gone
        ASSIGN_OR_RETURN(
            client::PartDirectory::LiveServer live,
            servers_->directory->Live(p, 0, &servers_->metadata, absl::Now() + absl::Seconds(10)));
        return live.client;
      },
      {.device = torch::kCPU, .dtype = client::FeatureDtype::kFloat32, .rows_per_call = 500});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(asked_part1, 2) << "part 1 was not asked again after its server went away";
  const torch::Tensor all = torch::arange(servers_->metadata.node_types[0].num_nodes);
  EXPECT_TRUE(torch::equal((*before)->Rows(0, all), (*after)->Rows(0, all)));
  (*replica)->Shutdown(absl::Seconds(1));
}

}  // namespace
}  // namespace graphshard::trainer
