// The whole training loop against in-process fake servers: one rank with the local
// communicator, and several ranks (threads) over a real Gloo rendezvous on loopback.
#include "trainer/train.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/trainer/fake_partition_service.h"

namespace graphshard::trainer {
namespace {

using testing::FakeGraph;
using testing::FakePartitionServer;

TrainerOptions SmallRun(const std::vector<std::string>& servers) {
  TrainerOptions o;
  o.servers = servers;
  o.epochs = 8;
  o.hidden = 16;
  o.fanouts = {2, 2};
  o.batch_size = 16;
  o.lr = 0.05;
  o.eval_every = 4;
  o.rpc_timeout_s = 10;
  o.server_wait_s = 10;
  o.collective_timeout_s = 30;
  return o;
}

absl::StatusOr<ServerSet> Connect(const TrainerOptions& o) {
  DiscoveryOptions d;
  d.servers = o.servers;
  d.server_wait_s = o.server_wait_s;
  d.client.rpc_timeout_s = o.rpc_timeout_s;
  return ConnectServers(d);
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

class TrainTest : public ::testing::Test {
 protected:
  FakeGraph graph_;
  FakePartitionServer s0_{graph_, 0};
  FakePartitionServer s1_{graph_, 1};
  std::vector<std::string> addresses_ = {s0_.address(), s1_.address()};
};

TEST_F(TrainTest, OneRankLearnsAndPrintsTheOutputContract) {
  TrainerOptions o = SmallRun(addresses_);
  absl::StatusOr<ServerSet> servers = Connect(o);
  ASSERT_TRUE(servers.ok()) << servers.status();
  std::unique_ptr<Communicator> comm = CreateLocalCommunicator();
  std::ostringstream out, log;
  absl::StatusOr<TrainSummary> summary = RunTraining(o, *servers, *comm, out, log);
  ASSERT_TRUE(summary.ok()) << summary.status() << "\n" << log.str();
  EXPECT_GT(summary->test_acc, 0.9);
  EXPECT_GT(summary->val_acc, 0.9);

  std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), static_cast<size_t>(o.epochs) + 1) << out.str();
  for (int e = 0; e < o.epochs; ++e) {
    EXPECT_TRUE(absl::StartsWith(lines[static_cast<size_t>(e)],
                                 "epoch " + std::to_string(e + 1) + " loss "))
        << lines[static_cast<size_t>(e)];
  }
  EXPECT_TRUE(absl::StrContains(lines[3], "val_acc"));   // epoch 4: evaluated
  EXPECT_FALSE(absl::StrContains(lines[4], "val_acc"));  // epoch 5: not
  ASSERT_EQ(lines.back().front(), '{');
  nlohmann::json j = nlohmann::json::parse(lines.back());
  for (const char* key : {"test_acc", "val_acc", "train_acc"}) {
    EXPECT_GE(j[key].get<double>(), 0.0) << key;
    EXPECT_LE(j[key].get<double>(), 1.0) << key;
  }
  EXPECT_EQ(j["epochs"], o.epochs);
  EXPECT_EQ(j["world_size"], 1);
  EXPECT_GT(j["seeds_per_s"].get<double>(), 0);
  EXPECT_EQ(j["weights_fingerprint"].get<std::string>().size(), 16u);
  EXPECT_TRUE(
      absl::StrContains(log.str(), "rank 0 weights_fingerprint " + summary->weights_fingerprint));
}

TEST_F(TrainTest, SameSeedSameWeights) {
  TrainerOptions o = SmallRun(addresses_);
  o.epochs = 2;
  std::string fingerprints[2];
  for (std::string& fp : fingerprints) {
    absl::StatusOr<ServerSet> servers = Connect(o);
    ASSERT_TRUE(servers.ok()) << servers.status();
    std::ostringstream out, log;
    absl::StatusOr<TrainSummary> s = RunTraining(o, *servers, *CreateLocalCommunicator(), out, log);
    ASSERT_TRUE(s.ok()) << s.status();
    fp = s->weights_fingerprint;
  }
  EXPECT_EQ(fingerprints[0], fingerprints[1]);
}

// Three ranks on two servers: part 0's seeds are split between ranks 0 and 2, which then have
// fewer batches than rank 1 and wrap around; all must still end with the same weights.
TEST_F(TrainTest, ThreeRanksOverGlooEndWithIdenticalWeights) {
  const int world = 3;
  const uint16_t port = FreePort();
  TrainerOptions o = SmallRun(addresses_);
  o.epochs = 3;
  std::vector<absl::StatusOr<TrainSummary>> results(world, absl::UnknownError("not run"));
  std::vector<std::string> outs(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      absl::StatusOr<ServerSet> servers = Connect(o);
      if (!servers.ok()) {
        results[static_cast<size_t>(r)] = servers.status();
        return;
      }
      RendezvousConfig rdv;
      rdv.master_port = port;
      rdv.rank = r;
      rdv.world_size = world;
      absl::StatusOr<std::unique_ptr<Communicator>> comm =
          CreateGlooCommunicator(rdv, GlooOptions{.timeout_s = 30});
      if (!comm.ok()) {
        results[static_cast<size_t>(r)] = comm.status();
        return;
      }
      std::ostringstream out, log;
      results[static_cast<size_t>(r)] = RunTraining(o, *servers, **comm, out, log);
      outs[static_cast<size_t>(r)] = out.str();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(results[static_cast<size_t>(r)].ok())
        << "rank " << r << ": " << results[static_cast<size_t>(r)].status();
  }
  EXPECT_EQ(results[0]->weights_fingerprint, results[1]->weights_fingerprint);
  EXPECT_EQ(results[0]->weights_fingerprint, results[2]->weights_fingerprint);
  EXPECT_EQ(results[0]->test_acc, results[2]->test_acc);  // all-reduced: global accuracy
  EXPECT_EQ(Lines(outs[0]).size(), static_cast<size_t>(o.epochs) + 1);
  EXPECT_TRUE(outs[1].empty());
  EXPECT_TRUE(outs[2].empty());
}

TEST_F(TrainTest, SamplingFailureIsAnErrorNamingTheServer) {
  TrainerOptions o = SmallRun(addresses_);
  absl::StatusOr<ServerSet> servers = Connect(o);
  ASSERT_TRUE(servers.ok()) << servers.status();
  s1_.FailSampling();
  std::ostringstream out, log;
  absl::StatusOr<TrainSummary> s = RunTraining(o, *servers, *CreateLocalCommunicator(), out, log);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(s.status().message(), s1_.address())) << s.status();
}

}  // namespace
}  // namespace graphshard::trainer
