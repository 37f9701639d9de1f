#include "tests/trainer/fake_partition_service.h"

#include <cstring>
#include <unordered_map>
#include <vector>

#include "proto/graphshard.grpc.pb.h"

namespace graphshard::trainer::testing {
namespace {

std::string Int64Bytes(const std::vector<int64_t>& v) {
  std::string s(v.size() * 8, '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

std::vector<int64_t> Int64s(const std::string& s) {
  std::vector<int64_t> v(s.size() / 8);
  if (!v.empty()) std::memcpy(v.data(), s.data(), v.size() * 8);
  return v;
}

}  // namespace

class FakePartitionServer::Service final : public v1::PartitionService::Service {
 public:
  Service(const FakeGraph& g, int part) : g_(g), part_(part) {}
  std::atomic<bool> fail_sampling{false};

  int64_t Offset(int p) const { return g_.num_nodes * p / g_.num_parts; }
  int64_t Label(int64_t v) const { return v % g_.num_classes; }
  // Same-label in-neighbours, wrapping around.
  std::vector<int64_t> InNeighbours(int64_t v) const {
    const int64_t n = g_.num_nodes, c = g_.num_classes;
    return {(v + c) % n, (v + 2 * c) % n, (v + n - c) % n};
  }

  grpc::Status GetMetadata(grpc::ServerContext*, const v1::GetMetadataRequest*,
                           v1::Metadata* m) override {
    m->set_part(part_);
    m->set_num_parts(g_.num_parts);
    m->set_num_nodes(g_.num_nodes);
    for (int p = 0; p <= g_.num_parts; ++p) m->add_part_offsets(Offset(p));
    m->set_feat_dim(g_.feat_dim);
    m->set_num_classes(g_.num_classes);
    return grpc::Status::OK;
  }

  grpc::Status GetSplit(grpc::ServerContext*, const v1::GetSplitRequest* req,
                        v1::GetSplitResponse* resp) override {
    std::vector<int64_t> ids;
    for (int64_t v = Offset(part_); v < Offset(part_ + 1); ++v) {
      const int64_t bucket = (v / g_.num_classes) % 10;
      const std::string split = bucket < 6 ? "train" : bucket < 8 ? "val" : "test";
      if (split == req->split()) ids.push_back(v);
    }
    resp->set_ids(Int64Bytes(ids));
    return grpc::Status::OK;
  }

  grpc::Status SampleMinibatch(grpc::ServerContext*, const v1::SampleMinibatchRequest* req,
                               v1::Minibatch* mb) override {
    if (fail_sampling) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "fake failure");
    std::vector<int64_t> nodes = Int64s(req->seeds());
    std::unordered_map<int64_t, int64_t> local;
    for (size_t i = 0; i < nodes.size(); ++i) local[nodes[i]] = static_cast<int64_t>(i);
    std::vector<int64_t> src, dst;
    size_t frontier_begin = 0;
    for (int hop = 0; hop < req->sampling().fanouts_size(); ++hop) {
      const size_t frontier_end = nodes.size();
      for (size_t i = frontier_begin; i < frontier_end; ++i) {
        for (int64_t u : InNeighbours(nodes[i])) {
          auto [it, fresh] = local.emplace(u, static_cast<int64_t>(nodes.size()));
          if (fresh) nodes.push_back(u);
          src.push_back(it->second);
          dst.push_back(static_cast<int64_t>(i));
        }
      }
      frontier_begin = frontier_end;
    }
    std::vector<float> feats(nodes.size() * static_cast<size_t>(g_.feat_dim), 0.0f);
    std::vector<int64_t> labels;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int64_t y = Label(nodes[i]);
      labels.push_back(y);
      float* row = feats.data() + i * static_cast<size_t>(g_.feat_dim);
      row[y] = 1.0f;
      row[g_.feat_dim - 1] = static_cast<float>(nodes[i] % 7) / 7.0f;  // noise
    }
    mb->set_batch_size(static_cast<int64_t>(Int64s(req->seeds()).size()));
    v1::NodeBlock* nb = mb->add_nodes();
    nb->set_node_type("node");
    nb->mutable_ids()->set_data(Int64Bytes(nodes));
    nb->set_feat_dim(g_.feat_dim);
    nb->mutable_features()->set_data(
        std::string(reinterpret_cast<const char*>(feats.data()), feats.size() * 4));
    nb->mutable_labels()->set_data(Int64Bytes(labels));
    v1::EdgeBlock* eb = mb->add_edges();
    eb->set_edge_type("node__to__node");
    eb->mutable_src()->set_data(Int64Bytes(src));
    eb->mutable_dst()->set_data(Int64Bytes(dst));
    return grpc::Status::OK;
  }

 private:
  FakeGraph g_;
  int part_;
};

FakePartitionServer::FakePartitionServer(const FakeGraph& graph, int part)
    : service_(std::make_unique<Service>(graph, part)) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  address_ = "127.0.0.1:" + std::to_string(port);
}

FakePartitionServer::~FakePartitionServer() { server_->Shutdown(); }

void FakePartitionServer::FailSampling() { service_->fail_sampling = true; }

}  // namespace graphshard::trainer::testing
