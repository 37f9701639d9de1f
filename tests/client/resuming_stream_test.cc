// A part's stream outlives its server: against real in-process servers on Cora, a
// ResumingBatchStream whose server is shut down mid-stream and started again on a new port
// carries exactly the batches of an unbroken stream; without a server it gives up after its
// wait, naming the part; replicas registered next to each other are failed over.
#include "client/resuming_stream.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "client/server_set.h"
#include "common/registry.h"
#include "common/transient_error.h"
#include "tests/server/test_cluster.h"

namespace graphshard::client {
namespace {

// What identifies a batch's content: its position and every array's bytes.
std::string Fingerprint(const MinibatchData& b) {
  std::string s = absl::StrCat(b.epoch, "/", b.batch_index, "/", b.batch_size, ":");
  auto add = [&s](const ByteView& v) { s.append(v.data, v.size); };
  for (const NodeBlockData& n : b.nodes) {
    add(n.ids);
    add(n.features);
    add(n.labels);
  }
  for (const EdgeBlockData& e : b.edges) {
    add(e.src);
    add(e.dst);
  }
  return s;
}

class ResumingStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ =
        std::make_unique<graphshard::testing::TestCluster>(graphshard::testing::ReadCora(), 2);
    registry_ = cluster_->registry_dir();
    DiscoveryOptions o;
    o.registry_dir = registry_;
    o.server_wait_s = 10;
    o.client.stall_timeout_s = 2;
    auto set = ConnectServers(o);
    ASSERT_TRUE(set.ok()) << set.status();
    servers_ = std::make_unique<ServerSet>(*std::move(set));
    auto seeds = servers_->clients[1]->GetSplit("train");
    ASSERT_TRUE(seeds.ok()) << seeds.status();
    options_.seeds = *seeds;
    options_.batch_size = 16;
    options_.epoch = 2;
    options_.first_batch = 1;
    options_.num_epochs = 20;  // more batches than can be in flight: the kill breaks the stream
    options_.fanouts = {5, 5};
  }

  // A replacement server for part 1 (port 0: a new address), publishing as `replica`.
  std::unique_ptr<server::PartitionServer> StartPart1(int replica = 0) {
    server::ServerOptions so;
    so.partition_dir = cluster_->partition_dir();
    so.part = 1;
    so.replica = replica;
    so.registry_dir = registry_;
    so.threads = 2;
    auto s = server::PartitionServer::Start(so);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  std::vector<std::string> ReadAll(BatchStream& stream) {
    std::vector<std::string> out;
    while (true) {
      auto b = stream.Next();
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok() || !b->has_value()) return out;
      out.push_back(Fingerprint(**b));
    }
  }

  std::unique_ptr<graphshard::testing::TestCluster> cluster_;
  std::string registry_;
  std::unique_ptr<ServerSet> servers_;
  StreamOptions options_;
};

TEST_F(ResumingStreamTest, ResumesAtTheNextBatchOnAServerRestartedOnANewPort) {
  auto plain = servers_->clients[1]->StreamBatches(options_, servers_->metadata);
  ASSERT_TRUE(plain.ok());
  const std::vector<std::string> expected = ReadAll(**plain);
  ASSERT_GT(expected.size(), 10u);

  std::vector<std::string> logged;
  ResumingBatchStream stream(*servers_->directory, 1, nullptr, options_, servers_->metadata,
                             {.wait_s = 20,
                              .preferred_replica = 0,
                              .log = [&](const std::string& l) { logged.push_back(l); }});
  ASSERT_TRUE(stream.Start().ok());
  std::vector<std::string> got;
  for (int i = 0; i < 5; ++i) {
    auto b = stream.Next();
    ASSERT_TRUE(b.ok() && b->has_value()) << b.status();
    got.push_back(Fingerprint(**b));
  }
  const std::string old_address = cluster_->server(1).address();
  cluster_->server(1).Shutdown(absl::ZeroDuration());
  std::unique_ptr<server::PartitionServer> restarted = StartPart1();
  ASSERT_NE(restarted, nullptr);
  ASSERT_NE(restarted->address(), old_address);
  for (std::string& b : ReadAll(stream)) got.push_back(std::move(b));
  EXPECT_EQ(got, expected);
  EXPECT_EQ(stream.reconnects(), 1);
  ASSERT_EQ(logged.size(), 2u);
  // After the 5 read, or later: batches already in flight still arrive.
  EXPECT_NE(logged[0].find("part 1: stream broken after "), std::string::npos) << logged[0];
  EXPECT_NE(logged[1].find(restarted->address()), std::string::npos) << logged[1];
}

TEST_F(ResumingStreamTest, FailsOverToAnotherReplicaAtOnce) {
  std::unique_ptr<server::PartitionServer> replica = StartPart1(/*replica=*/1);
  ASSERT_NE(replica, nullptr);
  auto plain = servers_->clients[1]->StreamBatches(options_, servers_->metadata);
  ASSERT_TRUE(plain.ok());
  const std::vector<std::string> expected = ReadAll(**plain);

  ResumingBatchStream stream(*servers_->directory, 1, servers_->clients[1], options_,
                             servers_->metadata,
                             {.wait_s = 20, .preferred_replica = 0, .log = nullptr});
  ASSERT_TRUE(stream.Start().ok());
  std::vector<std::string> got;
  for (int i = 0; i < 3; ++i) {
    auto b = stream.Next();
    ASSERT_TRUE(b.ok() && b->has_value()) << b.status();
    got.push_back(Fingerprint(**b));
  }
  cluster_->server(1).Shutdown(absl::ZeroDuration());  // replica 0
  const absl::Time t0 = absl::Now();
  auto b = stream.Next();
  ASSERT_TRUE(b.ok() && b->has_value()) << b.status();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(5));  // no waiting for replica 0 to come back
  got.push_back(Fingerprint(**b));
  for (std::string& rest : ReadAll(stream)) got.push_back(std::move(rest));
  EXPECT_EQ(got, expected);
}

TEST_F(ResumingStreamTest, GivesUpAfterTheWaitNamingThePart) {
  ResumingBatchStream stream(*servers_->directory, 1, servers_->clients[1], options_,
                             servers_->metadata,
                             {.wait_s = 0.5, .preferred_replica = 0, .log = nullptr});
  ASSERT_TRUE(stream.Start().ok());
  ASSERT_TRUE(stream.Next().ok());
  cluster_->server(1).Shutdown(absl::ZeroDuration());
  absl::Status status;
  for (int i = 0; i < 1000 && status.ok(); ++i) status = stream.Next().status();
  EXPECT_TRUE(common::IsTransientError(status)) << status;
  EXPECT_NE(status.message().find("part 1: no live server for 0.5s"), absl::string_view::npos)
      << status;
}

}  // namespace
}  // namespace graphshard::client
