#include "server/proto_convert.h"

#include <cstring>

#include "common/status_macros.h"
#include "rpc/feature_dtype_proto.h"

namespace graphshard::server {
namespace {

constexpr size_t kShmAlign = 64;

size_t AlignUp(size_t n) { return (n + kShmAlign - 1) / kShmAlign * kShmAlign; }

// Puts arrays either inline or into a shared-memory segment, one after another.
class ArraySink {
 public:
  explicit ArraySink(shm::ShmSegment* segment) : segment_(segment) {}
  template <typename T>
  void Put(const std::vector<T>& values, v1::Array* out) {
    PutBytes(absl::Span<const char>(reinterpret_cast<const char*>(values.data()),
                                    values.size() * sizeof(T)),
             out);
  }
  // Bytes already at their place in the segment (written there by a FeaturePlacer) are not
  // copied again.
  void PutBytes(absl::Span<const char> bytes, v1::Array* out) {
    if (segment_ == nullptr) {
      out->set_data(bytes.data(), bytes.size());
      return;
    }
    char* dest = segment_->data() + offset_;
    if (!bytes.empty() && bytes.data() != dest) std::memcpy(dest, bytes.data(), bytes.size());
    out->set_shm_offset(offset_);
    out->set_shm_length(bytes.size());
    offset_ += AlignUp(bytes.size());
  }

 private:
  shm::ShmSegment* segment_;
  size_t offset_ = 0;
};

// The feature rows of every block come first (ShmFeatureOffsets), then the other arrays.
void FillMinibatch(const engine::Minibatch& b, ArraySink& sink, v1::Minibatch* p) {
  p->set_batch_size(b.batch_size);
  p->set_seed_type(b.seed_type);
  p->set_feature_dtype(rpc::FeatureDtypeToProto(b.feature_dtype));
  p->set_features_omitted(b.features_omitted);
  for (const engine::NodeBlock& n : b.nodes) {
    v1::NodeBlock* pn = p->add_nodes();
    pn->set_node_type(n.node_type);
    pn->set_feat_dim(n.feat_dim);
    sink.PutBytes(n.FeatureData(), pn->mutable_features());
  }
  for (size_t i = 0; i < b.nodes.size(); ++i) {
    const engine::NodeBlock& n = b.nodes[i];
    v1::NodeBlock* pn = p->mutable_nodes(static_cast<int>(i));
    sink.Put(n.ids, pn->mutable_ids());
    sink.Put(n.labels, pn->mutable_labels());
    if (!n.tree.empty()) sink.Put(n.tree, pn->mutable_tree());
    for (int64_t x : n.num_sampled_nodes) pn->add_num_sampled_nodes(x);
  }
  for (const engine::EdgeBlock& e : b.edges) {
    v1::EdgeBlock* pe = p->add_edges();
    pe->set_edge_type(e.edge_type);
    sink.Put(e.src, pe->mutable_src());
    sink.Put(e.dst, pe->mutable_dst());
    for (int64_t x : e.num_sampled_edges) pe->add_num_sampled_edges(x);
  }
  if (!b.link.edge_type.empty()) {
    v1::LinkLabels* pl = p->mutable_link();
    pl->set_edge_type(b.link.edge_type);
    pl->set_num_pos(b.link.num_pos);
    sink.Put(b.link.src, pl->mutable_src());
    sink.Put(b.link.dst, pl->mutable_dst());
    sink.Put(b.link.label, pl->mutable_label());
  }
}

}  // namespace

absl::StatusOr<engine::TemporalMode> FromProto(v1::TemporalMode mode) {
  switch (mode) {
    case v1::TEMPORAL_OFF:
      return engine::TemporalMode::kOff;
    case v1::TEMPORAL_AT_OR_BEFORE:
      return engine::TemporalMode::kAtOrBefore;
    case v1::TEMPORAL_BEFORE:
      return engine::TemporalMode::kBefore;
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown temporal mode ", mode));
  }
}

v1::TemporalMode ToProto(engine::TemporalMode mode) {
  switch (mode) {
    case engine::TemporalMode::kAtOrBefore:
      return v1::TEMPORAL_AT_OR_BEFORE;
    case engine::TemporalMode::kBefore:
      return v1::TEMPORAL_BEFORE;
    default:
      return v1::TEMPORAL_OFF;
  }
}

absl::StatusOr<engine::TemporalStrategy> FromProto(v1::TemporalStrategy strategy) {
  switch (strategy) {
    case v1::TEMPORAL_UNIFORM:
      return engine::TemporalStrategy::kUniform;
    case v1::TEMPORAL_LAST:
      return engine::TemporalStrategy::kLast;
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown temporal strategy ", strategy));
  }
}

v1::TemporalStrategy ToProto(engine::TemporalStrategy strategy) {
  return strategy == engine::TemporalStrategy::kLast ? v1::TEMPORAL_LAST : v1::TEMPORAL_UNIFORM;
}

absl::StatusOr<engine::OneHopRequest> FromProto(const v1::SampleOneHopRequest& p) {
  engine::OneHopRequest r;
  r.replace = p.replace();
  ASSIGN_OR_RETURN(r.temporal, FromProto(p.temporal()));
  ASSIGN_OR_RETURN(r.temporal_strategy, FromProto(p.temporal_strategy()));
  for (const v1::HopItem& item : p.items()) {
    engine::HopItem i;
    i.edge_type = item.edge_type();
    ASSIGN_OR_RETURN(i.seeds, FromBytes<int64_t>(item.seeds(), "seeds"));
    ASSIGN_OR_RETURN(i.times, FromBytes<int64_t>(item.times(), "times"));
    i.fanout = item.fanout();
    i.seed = item.seed();
    r.items.push_back(std::move(i));
  }
  return r;
}

v1::SampleOneHopRequest ToProto(const engine::OneHopRequest& r) {
  v1::SampleOneHopRequest p;
  p.set_replace(r.replace);
  p.set_temporal(ToProto(r.temporal));
  p.set_temporal_strategy(ToProto(r.temporal_strategy));
  for (const engine::HopItem& i : r.items) {
    v1::HopItem* item = p.add_items();
    item->set_edge_type(i.edge_type);
    item->set_seeds(ToBytes<int64_t>(i.seeds));
    if (!i.times.empty()) item->set_times(ToBytes<int64_t>(i.times));
    item->set_fanout(i.fanout);
    item->set_seed(i.seed);
  }
  return p;
}

absl::StatusOr<std::vector<engine::HopResult>> FromProto(const v1::SampleOneHopResponse& p) {
  std::vector<engine::HopResult> out;
  for (const v1::HopResult& item : p.items()) {
    engine::HopResult r;
    ASSIGN_OR_RETURN(r.counts, FromBytes<int64_t>(item.counts(), "counts"));
    ASSIGN_OR_RETURN(r.neighbors, FromBytes<int64_t>(item.neighbors(), "neighbors"));
    out.push_back(std::move(r));
  }
  return out;
}

void ToProto(const std::vector<engine::HopResult>& r, v1::SampleOneHopResponse* p) {
  for (const engine::HopResult& i : r) {
    v1::HopResult* item = p->add_items();
    item->set_counts(ToBytes<int64_t>(i.counts));
    item->set_neighbors(ToBytes<int64_t>(i.neighbors));
  }
}

absl::StatusOr<std::vector<engine::TypedIds>> FromProto(const v1::GatherFeaturesRequest& p) {
  std::vector<engine::TypedIds> out;
  for (const v1::TypedIds& item : p.items()) {
    engine::TypedIds t;
    t.node_type = item.node_type();
    ASSIGN_OR_RETURN(t.ids, FromBytes<int64_t>(item.ids(), "ids"));
    out.push_back(std::move(t));
  }
  return out;
}

v1::GatherFeaturesRequest ToProto(const std::vector<engine::TypedIds>& items,
                                  engine::FeatureDtype dtype, const std::string& client_host_id) {
  v1::GatherFeaturesRequest p;
  p.set_dtype(rpc::FeatureDtypeToProto(dtype));
  p.set_client_host_id(client_host_id);
  for (const engine::TypedIds& t : items) {
    v1::TypedIds* item = p.add_items();
    item->set_node_type(t.node_type);
    item->set_ids(ToBytes<int64_t>(t.ids));
  }
  return p;
}

absl::StatusOr<std::vector<engine::FeatureBlock>> FromProto(const v1::GatherFeaturesResponse& p,
                                                            absl::string_view shm_prefix,
                                                            absl::string_view shm_key) {
  std::shared_ptr<const shm::ShmSegment> segment;
  if (!p.shm_name().empty()) {
    RETURN_IF_ERROR(shm::CheckSegmentName(p.shm_name(), shm_prefix, shm_key));
    ASSIGN_OR_RETURN(segment, shm::ShmSegment::OpenAndUnlink(p.shm_name(), p.shm_size()));
  }
  std::vector<engine::FeatureBlock> out;
  for (const v1::FeatureBlock& item : p.items()) {
    engine::FeatureBlock b;
    b.feat_dim = item.feat_dim();
    if (segment != nullptr) {
      const v1::Array& a = item.features();
      if (!common::RangeFits(a.shm_offset(), a.shm_length(), segment->size())) {
        return absl::DataLossError(absl::StrCat("features outside shm segment ", p.shm_name()));
      }
      b.features.assign(segment->data() + a.shm_offset(),
                        segment->data() + a.shm_offset() + a.shm_length());
    } else {
      b.features.assign(item.features().data().begin(), item.features().data().end());
    }
    ASSIGN_OR_RETURN(b.labels, FromBytes<int64_t>(item.labels(), "labels"));
    out.push_back(std::move(b));
  }
  return out;
}

void ToProto(const std::vector<engine::FeatureBlock>& blocks, shm::ShmSegment* segment,
             v1::GatherFeaturesResponse* p) {
  ArraySink sink(segment);
  for (const engine::FeatureBlock& b : blocks) {
    v1::FeatureBlock* item = p->add_items();
    item->set_feat_dim(b.feat_dim);
    sink.Put(b.features, item->mutable_features());
    item->set_labels(ToBytes<int64_t>(b.labels));
  }
  if (segment != nullptr) {
    p->set_shm_name(segment->name());
    p->set_shm_size(segment->size());
  }
}

size_t ShmBytes(const std::vector<engine::FeatureBlock>& blocks) {
  size_t n = 0;
  for (const engine::FeatureBlock& b : blocks) n += AlignUp(b.features.size());
  return n;
}

absl::StatusOr<engine::SamplingConfig> FromProto(const v1::SamplingConfig& p) {
  engine::SamplingConfig c;
  c.fanouts.assign(p.fanouts().begin(), p.fanouts().end());
  for (const auto& [name, list] : p.edge_fanouts()) {
    c.edge_fanouts[name].assign(list.fanouts().begin(), list.fanouts().end());
  }
  c.replace = p.replace();
  c.disjoint = p.disjoint();
  ASSIGN_OR_RETURN(c.feature_dtype, rpc::FeatureDtypeFromProto(p.feature_dtype()));
  ASSIGN_OR_RETURN(c.temporal, FromProto(p.temporal()));
  ASSIGN_OR_RETURN(c.temporal_strategy, FromProto(p.temporal_strategy()));
  c.without_features = p.without_features();
  return c;
}

absl::StatusOr<engine::MinibatchRequest> FromProto(const v1::SampleMinibatchRequest& p) {
  engine::MinibatchRequest r;
  r.seed_type = p.seed_type();
  ASSIGN_OR_RETURN(r.seeds, FromBytes<int64_t>(p.seeds(), "seeds"));
  ASSIGN_OR_RETURN(r.sampling, FromProto(p.sampling()));
  r.seed = p.seed();
  ASSIGN_OR_RETURN(r.seed_times, FromBytes<int64_t>(p.seed_times(), "seed_times"));
  return r;
}

void ToProto(const engine::Minibatch& b, v1::Minibatch* p) {
  ArraySink sink(nullptr);
  FillMinibatch(b, sink, p);
}

void ToProto(const engine::Minibatch& b, shm::ShmSegment& segment, v1::Minibatch* p) {
  ArraySink sink(&segment);
  FillMinibatch(b, sink, p);
  p->set_shm_name(segment.name());
  p->set_shm_size(segment.size());
}

size_t ShmBytes(const engine::Minibatch& b, const std::vector<size_t>* feature_bytes) {
  size_t n = 0;
  for (size_t i = 0; i < b.nodes.size(); ++i) {
    const engine::NodeBlock& x = b.nodes[i];
    n += AlignUp(feature_bytes != nullptr ? (*feature_bytes)[i] : x.FeatureData().size());
    n += AlignUp(x.ids.size() * 8) + AlignUp(x.labels.size() * 8) + AlignUp(x.tree.size() * 8);
  }
  for (const engine::EdgeBlock& e : b.edges) n += AlignUp(e.src.size() * 8) + AlignUp(e.dst.size() * 8);
  n += AlignUp(b.link.src.size() * 8) + AlignUp(b.link.dst.size() * 8) +
       AlignUp(b.link.label.size() * 4);
  return n;
}

std::vector<size_t> ShmFeatureOffsets(const std::vector<size_t>& feature_bytes) {
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (size_t bytes : feature_bytes) {
    offsets.push_back(offset);
    offset += AlignUp(bytes);
  }
  return offsets;
}

}  // namespace graphshard::server
