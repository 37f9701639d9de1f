#ifndef GRAPHSHARD_TESTS_SERVER_TEST_CLUSTER_H_
#define GRAPHSHARD_TESTS_SERVER_TEST_CLUSTER_H_

// Test-only: partitions a graph into a temp folder and starts real in-process partition servers
// on port 0 that find each other through a registry folder.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "partitioner/partition.h"
#include "partitioner/read_input.h"
#include "proto/graphshard.grpc.pb.h"
#include "rpc/channel.h"
#include "server/partition_server.h"
#include "shm/host_proof.h"
#include "shm/ring.h"
#include "tests/testing/source_paths.h"

namespace graphshard::testing {

inline std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "graphshard_test_XXXXXX").string();
  char* made = ::mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr);
  return tmpl;
}

inline partitioner::Graph ReadCora() {
  partitioner::OgbReadOptions options;
  options.undirected = true;
  auto graph = partitioner::ReadOgbHomogeneous(SourceDir() + "/tests/data/cora", options);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

class TestCluster {
 public:
  // Partitions `graph` into `parts` (random, seed 7) and starts one server per part; `adjust`,
  // if set, edits each server's options last.
  template <typename G>
  TestCluster(const G& graph, int parts, engine::Limits limits = {},
              server::ServiceOptions service = {},
              server::PeerFeatures peer_features = server::PeerFeatures::kLocal,
              server::PeerSampling peer_sampling = server::PeerSampling::kLocal,
              const std::function<void(server::ServerOptions&)>& adjust = {})
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
      so.threads = 2;
      so.service = service;
      so.peer_features = peer_features;
      so.peer_sampling = peer_sampling;
      if (adjust) adjust(so);
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
  std::string registry_dir() const { return dir_ + "/registry"; }
  server::PartitionServer& server(int p) { return *servers_[p]; }

  std::unique_ptr<v1::PartitionService::Stub> Stub(int p) {
    return v1::PartitionService::NewStub(rpc::MakeChannel(servers_[p]->address()));
  }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<server::PartitionServer>> servers_;
};

// The shm key SetSameHost gives a request that has none (16 bytes or more, as a client's).
inline constexpr char kTestShmKey[] = "test-client-shm-key-0123456789";

// Makes `request` (StreamBatchesRequest or GatherFeaturesRequest) a same-host client's: the
// host id and the server's same-host proof, read as a trainer reads it (shm/host_proof.h).
template <typename Request>
void SetSameHost(v1::PartitionService::Stub& stub, Request& request) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::Metadata md;
  grpc::Status got = stub.GetMetadata(&ctx, v1::GetMetadataRequest(), &md);
  ASSERT_TRUE(got.ok()) << got.error_message();
  request.set_client_host_id(md.host_id());
  absl::StatusOr<std::string> proof = shm::ReadHostProof(md.host_proof_name());
  ASSERT_TRUE(proof.ok()) << proof.status();
  request.set_client_host_proof(*proof);
  // The client's secret its segments are named for (shm::TaggedSegmentName), unless it has one.
  if constexpr (std::is_same_v<Request, v1::StreamBatchesRequest>) {
    if (request.shm_ring_key().empty()) request.set_shm_ring_key(kTestShmKey);
  } else {
    if (request.shm_key().empty()) request.set_shm_key(kTestShmKey);
  }
}

// A minibatch with its arrays decoded (inline or from shared memory), per type name.
struct DecodedBlock {
  std::vector<int64_t> ids, labels, tree;
  std::vector<char> features;
  std::vector<int64_t> num_sampled;
};
struct DecodedEdges {
  std::vector<int64_t> src, dst, num_sampled;
};
struct Decoded {
  int64_t batch_size = 0;
  std::map<std::string, DecodedBlock> nodes;
  std::map<std::string, DecodedEdges> edges;
  std::vector<float> Features(const std::string& type) const {
    const std::vector<char>& f = nodes.at(type).features;
    std::vector<float> out(f.size() / 4);
    if (!out.empty()) std::memcpy(out.data(), f.data(), f.size());
    return out;
  }
};

template <typename T>
std::vector<T> ArrayOf(const v1::Array& a, const char* shm) {
  const char* data = shm != nullptr ? shm + a.shm_offset() : a.data().data();
  size_t bytes = shm != nullptr ? a.shm_length() : a.data().size();
  std::vector<T> out(bytes / sizeof(T));
  if (bytes > 0) std::memcpy(out.data(), data, bytes);
  return out;
}

// Copies the batch out; a ring segment (m.shm_ring) is read through `ring` and released on
// return.
inline Decoded Decode(const v1::Minibatch& m, shm::ShmRingReader* ring = nullptr) {
  std::shared_ptr<const shm::ShmSegment> segment;
  if (!m.shm_name().empty()) {
    EXPECT_EQ(m.shm_ring(), ring != nullptr) << "ring segment without a reader, or the reverse";
    auto opened = m.shm_ring() && ring != nullptr
                      ? ring->Open(m.shm_name(), m.shm_size(), m.shm_ring_serial())
                      : shm::ShmSegment::OpenAndUnlink(m.shm_name(), m.shm_size());
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (opened.ok()) segment = *opened;
  }
  const char* shm = segment ? segment->data() : nullptr;
  Decoded d;
  d.batch_size = m.batch_size();
  for (const v1::NodeBlock& n : m.nodes()) {
    DecodedBlock& b = d.nodes[n.node_type()];
    b.ids = ArrayOf<int64_t>(n.ids(), shm);
    b.labels = ArrayOf<int64_t>(n.labels(), shm);
    b.tree = ArrayOf<int64_t>(n.tree(), shm);
    b.features = ArrayOf<char>(n.features(), shm);
    b.num_sampled.assign(n.num_sampled_nodes().begin(), n.num_sampled_nodes().end());
  }
  for (const v1::EdgeBlock& e : m.edges()) {
    DecodedEdges& b = d.edges[e.edge_type()];
    b.src = ArrayOf<int64_t>(e.src(), shm);
    b.dst = ArrayOf<int64_t>(e.dst(), shm);
    b.num_sampled.assign(e.num_sampled_edges().begin(), e.num_sampled_edges().end());
  }
  return d;
}

// A client context with a 10 s deadline.
inline std::unique_ptr<grpc::ClientContext> Context() {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return c;
}

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_SERVER_TEST_CLUSTER_H_
