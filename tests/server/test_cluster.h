#ifndef GRAPHSHARD_TESTS_SERVER_TEST_CLUSTER_H_
#define GRAPHSHARD_TESTS_SERVER_TEST_CLUSTER_H_

// Test-only: partitions a graph into a temp folder and starts real in-process partition servers
// on port 0 that find each other through a registry folder.

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "partitioner/input_graph.h"
#include "partitioner/partition.h"
#include "proto/graphshard.grpc.pb.h"
#include "server/grpc_options.h"
#include "server/partition_server.h"

namespace graphshard::testing {

inline std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "graphshard_test_XXXXXX").string();
  char* made = ::mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr);
  return tmpl;
}

inline partitioner::InputGraph ReadCora() {
  partitioner::OgbReadOptions options;
  options.undirected = true;
  auto graph = partitioner::ReadOgbHomogeneous(
      std::string(GRAPHSHARD_SOURCE_DIR) + "/tests/data/cora", options);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

class TestCluster {
 public:
  // Partitions `graph` into `parts` (random, seed 7) and starts one server per part.
  TestCluster(const partitioner::InputGraph& graph, int parts, engine::Limits limits = {})
      : dir_(MakeTempDir()) {
    partitioner::PartitionOptions options;
    options.num_parts = parts;
    options.seed = 7;
    auto manifest = partitioner::PartitionGraph(graph, options, dir_ + "/parts");
    EXPECT_TRUE(manifest.ok()) << manifest.status();
    for (int p = 0; p < parts; ++p) {
      server::ServerOptions so;
      so.partition_dir = dir_ + "/parts";
      so.part = p;
      so.registry_dir = dir_ + "/registry";
      so.rpc_timeout = absl::Seconds(10);
      so.limits = limits;
      auto s = server::PartitionServer::Start(so);
      EXPECT_TRUE(s.ok()) << s.status();
      servers_.push_back(*std::move(s));
    }
  }
  ~TestCluster() {
    for (auto& s : servers_) s->Shutdown(absl::Seconds(1));
    std::filesystem::remove_all(dir_);
  }

  std::string partition_dir() const { return dir_ + "/parts"; }
  server::PartitionServer& server(int p) { return *servers_[p]; }

  std::unique_ptr<v1::PartitionService::Stub> Stub(int p) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(server::kMaxMessageBytes);
    return v1::PartitionService::NewStub(grpc::CreateCustomChannel(
        servers_[p]->address(), grpc::InsecureChannelCredentials(), args));
  }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<server::PartitionServer>> servers_;
};

// A client context with a 10 s deadline.
inline std::unique_ptr<grpc::ClientContext> Context() {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return c;
}

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_SERVER_TEST_CLUSTER_H_
