#include "server/proto_convert.h"

#include "common/status_macros.h"

namespace graphshard::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

absl::StatusOr<engine::OneHopRequest> FromProto(const v1::SampleOneHopRequest& p) {
  engine::OneHopRequest r;
  ASSIGN_OR_RETURN(r.seeds, FromBytes<int64_t>(p.seeds(), "seeds"));
  r.fanout = p.fanout();
  r.replace = p.replace();
  r.seed = p.seed();
  return r;
}

v1::SampleOneHopRequest ToProto(const engine::OneHopRequest& r) {
  v1::SampleOneHopRequest p;
  p.set_seeds(ToBytes<int64_t>(r.seeds));
  p.set_fanout(r.fanout);
  p.set_replace(r.replace);
  p.set_seed(r.seed);
  return p;
}

absl::StatusOr<engine::OneHopResult> FromProto(const v1::SampleOneHopResponse& p) {
  engine::OneHopResult r;
  ASSIGN_OR_RETURN(r.counts, FromBytes<int64_t>(p.counts(), "counts"));
  ASSIGN_OR_RETURN(r.neighbors, FromBytes<int64_t>(p.neighbors(), "neighbors"));
  return r;
}

void ToProto(const engine::OneHopResult& r, v1::SampleOneHopResponse* p) {
  p->set_counts(ToBytes<int64_t>(r.counts));
  p->set_neighbors(ToBytes<int64_t>(r.neighbors));
}

absl::StatusOr<engine::FeatureRows> FromProto(const v1::GatherFeaturesResponse& p) {
  engine::FeatureRows r;
  r.feat_dim = p.feat_dim();
  ASSIGN_OR_RETURN(r.features, FromBytes<float>(p.features(), "features"));
  ASSIGN_OR_RETURN(r.labels, FromBytes<int64_t>(p.labels(), "labels"));
  return r;
}

void ToProto(const engine::FeatureRows& r, v1::GatherFeaturesResponse* p) {
  p->set_feat_dim(r.feat_dim);
  p->set_features(ToBytes<float>(r.features));
  p->set_labels(ToBytes<int64_t>(r.labels));
}

absl::StatusOr<engine::MinibatchRequest> FromProto(const v1::SampleMinibatchRequest& p) {
  engine::MinibatchRequest r;
  ASSIGN_OR_RETURN(r.seeds, FromBytes<int64_t>(p.seeds(), "seeds"));
  r.fanouts.assign(p.fanouts().begin(), p.fanouts().end());
  r.replace = p.replace();
  r.seed = p.seed();
  return r;
}

void ToProto(const engine::Minibatch& b, v1::Minibatch* p) {
  p->set_batch_size(b.batch_size);
  p->set_node_ids(ToBytes<int64_t>(b.node_ids));
  p->set_feat_dim(b.feat_dim);
  p->set_features(ToBytes<float>(b.features));
  p->set_labels(ToBytes<int64_t>(b.labels));
  p->set_edge_src(ToBytes<int64_t>(b.edge_src));
  p->set_edge_dst(ToBytes<int64_t>(b.edge_dst));
  for (int64_t n : b.num_sampled_nodes) p->add_num_sampled_nodes(n);
  for (int64_t n : b.num_sampled_edges) p->add_num_sampled_edges(n);
}

}  // namespace graphshard::server
