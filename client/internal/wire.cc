#include "client/internal/wire.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/bytes.h"
#include "common/status_macros.h"
#include "rpc/feature_dtype_proto.h"
#include "shm/ring.h"

namespace graphshard::client::internal {
namespace {

// The bytes of one Array: inline, or a range of the mapped segment (checked against its size).
absl::StatusOr<ByteView> View(const v1::Array& a, const shm::ShmSegment* shm,
                              absl::string_view what) {
  if (shm == nullptr) return ByteView{a.data().data(), a.data().size()};
  if (!a.data().empty()) {
    return absl::DataLossError(absl::StrCat("minibatch ", what, ": inline bytes in a shm batch"));
  }
  if (!common::RangeFits(a.shm_offset(), a.shm_length(), shm->size())) {
    return absl::DataLossError(absl::StrCat("minibatch ", what, ": shm range [", a.shm_offset(),
                                            ", +", a.shm_length(), ") outside the segment of ",
                                            shm->size(), " bytes"));
  }
  return ByteView{shm->data() + a.shm_offset(), static_cast<size_t>(a.shm_length())};
}

absl::Status CheckLength(const ByteView& v, int64_t count, int64_t elem, absl::string_view what) {
  if (static_cast<int64_t>(v.size) != count * elem) {
    return absl::DataLossError(absl::StrCat("minibatch ", what, ": ", v.size, " bytes for ", count,
                                            " elements of ", elem, " bytes"));
  }
  return absl::OkStatus();
}

// Reads element i of an int64 array through memcpy: shm offsets are aligned, inline protobuf
// bytes need not be.
int64_t Int64At(const ByteView& v, int64_t i) {
  int64_t x;
  std::memcpy(&x, v.data + static_cast<size_t>(i) * sizeof(int64_t), sizeof(int64_t));
  return x;
}

// Elements [begin, end) of `v` lie in [lo, hi).
absl::Status CheckIndices(const ByteView& v, int64_t begin, int64_t end, int64_t lo, int64_t hi,
                          absl::string_view what, int64_t hop) {
  for (int64_t i = begin; i < end; ++i) {
    const int64_t x = Int64At(v, i);
    if (x < lo || x >= hi) {
      return absl::DataLossError(absl::StrCat("minibatch ", what, "[", i, "] = ", x, " (hop ", hop,
                                              ") is outside [", lo, ", ", hi, ")"));
    }
  }
  return absl::OkStatus();
}

// `counts` (per hop) are non-negative and add up to `total`: prefix sums, [counts + 1].
absl::StatusOr<std::vector<int64_t>> HopPrefix(absl::Span<const int64_t> counts, int64_t total,
                                               absl::string_view what) {
  std::vector<int64_t> prefix = {0};
  for (int64_t c : counts) {
    if (c < 0 || c > total - prefix.back()) {
      return absl::DataLossError(absl::StrCat("minibatch ", what, ": hop ", prefix.size() - 1,
                                              " count ", c, " does not fit the ", total, " rows"));
    }
    prefix.push_back(prefix.back() + c);
  }
  if (prefix.back() != total) {
    return absl::DataLossError(absl::StrCat("minibatch ", what, ": hop counts add up to ",
                                            prefix.back(), ", not ", total));
  }
  return prefix;
}

// A batch's dtype: an unknown value is bad data from the server (DataLoss).
absl::StatusOr<FeatureDtype> FromProto(v1::FeatureDtype d) {
  absl::StatusOr<FeatureDtype> dtype = rpc::FeatureDtypeFromProto(d);
  if (!dtype.ok()) {
    return absl::DataLossError(absl::StrCat("minibatch feature_dtype: ", dtype.status().message()));
  }
  return dtype;
}

// A link batch's supervision edges: a known edge type, arrays of one length, rows among the
// hop-0 nodes of their blocks (node blocks decoded first), batch_size equal to their count.
absl::Status DecodeLinkLabels(const v1::LinkLabels& l, const ServerMetadata& md,
                              const shm::ShmSegment* shm, MinibatchData& b) {
  LinkLabelData& out = b.link;
  out.edge_type = l.edge_type();
  out.edge_type_index = -1;
  for (size_t e = 0; e < md.edge_types.size(); ++e) {
    if (md.edge_types[e].name == out.edge_type) out.edge_type_index = static_cast<int>(e);
  }
  if (out.edge_type_index < 0) {
    return absl::DataLossError(absl::StrCat("minibatch link edge type '", out.edge_type,
                                            "' is not an edge type of the graph"));
  }
  const EdgeTypeInfo& t = md.edge_types[static_cast<size_t>(out.edge_type_index)];
  out.src_block = t.src;
  out.dst_block = t.dst;
  ASSIGN_OR_RETURN(out.src, View(l.src(), shm, "link src"));
  ASSIGN_OR_RETURN(out.dst, View(l.dst(), shm, "link dst"));
  ASSIGN_OR_RETURN(out.label, View(l.label(), shm, "link label"));
  out.num_edges = static_cast<int64_t>(out.src.size / sizeof(int64_t));
  RETURN_IF_ERROR(CheckLength(out.src, out.num_edges, 8, "link src"));
  RETURN_IF_ERROR(CheckLength(out.dst, out.num_edges, 8, "link dst"));
  RETURN_IF_ERROR(CheckLength(out.label, out.num_edges, 4, "link label"));
  out.num_pos = l.num_pos();
  if (out.num_edges < 1 || out.num_pos < 1 || out.num_pos > out.num_edges ||
      b.batch_size != out.num_edges) {
    return absl::DataLossError(absl::StrCat("minibatch link: ", out.num_edges, " edges, ",
                                            out.num_pos, " positive, batch_size ", b.batch_size));
  }
  const int64_t src_seeds = b.nodes[static_cast<size_t>(t.src)].num_sampled_nodes[0];
  const int64_t dst_seeds = b.nodes[static_cast<size_t>(t.dst)].num_sampled_nodes[0];
  RETURN_IF_ERROR(CheckIndices(out.src, 0, out.num_edges, 0, src_seeds, "link src", 0));
  RETURN_IF_ERROR(CheckIndices(out.dst, 0, out.num_edges, 0, dst_seeds, "link dst", 0));
  return absl::OkStatus();
}

}  // namespace

v1::StreamBatchesRequest EncodeStreamRequest(const StreamOptions& o) {
  v1::StreamBatchesRequest r;
  r.set_seed_type(o.seed_type);
  r.set_seeds(common::ToBytes<int64_t>(o.seeds));
  r.set_batch_size(o.batch_size);
  r.set_shuffle(o.shuffle);
  r.set_shuffle_seed(o.shuffle_seed);
  r.set_epoch(o.epoch);
  r.set_first_batch(o.first_batch);
  r.set_num_batches(o.num_batches);
  r.set_num_epochs(o.num_epochs);
  for (int32_t f : o.fanouts) r.mutable_sampling()->add_fanouts(f);
  r.mutable_sampling()->set_replace(o.replace);
  switch (o.temporal) {
    case TemporalSampling::kOff:
      break;
    case TemporalSampling::kAtOrBefore:
      r.mutable_sampling()->set_temporal(v1::TEMPORAL_AT_OR_BEFORE);
      break;
    case TemporalSampling::kBefore:
      r.mutable_sampling()->set_temporal(v1::TEMPORAL_BEFORE);
      break;
  }
  if (o.temporal_last) r.mutable_sampling()->set_temporal_strategy(v1::TEMPORAL_LAST);
  r.mutable_sampling()->set_feature_dtype(rpc::FeatureDtypeToProto(o.feature_dtype));
  r.mutable_sampling()->set_without_features(o.without_features);
  r.set_client_host_id(o.client_host_id);
  r.set_shm_ring(o.max_held_batches);  // GrpcBatchStream reads ring segments
  if (!o.link.edge_type.empty()) {
    v1::LinkSampling* link = r.mutable_link();
    link->set_edge_type(o.link.edge_type);
    link->set_split(o.link.split);
    link->set_neg_ratio(o.link.neg_ratio);
    link->set_neg_sampling(o.link.degree_negatives ? v1::NEG_DEGREE : v1::NEG_UNIFORM);
  }
  r.set_table(o.table);
  return r;
}

namespace {

// A batch's segment that no longer exists (NotFound) was unlinked by its server: a server
// unlinks the segments it sent and the reader has not opened yet when the stream ends early (a
// failed peer, a cancelled or restarting stream, ShmRing::UnlinkAll), while the batch's message
// may still be on its way. That is a broken stream, not a bad batch: Unavailable, which a
// resuming stream (resuming_stream.h) resumes from this batch on.
absl::StatusOr<std::shared_ptr<const shm::ShmSegment>> SegmentGoneIsABrokenStream(
    absl::StatusOr<std::shared_ptr<const shm::ShmSegment>> opened) {
  if (opened.ok() || !absl::IsNotFound(opened.status())) return opened;
  return absl::UnavailableError(
      absl::StrCat(opened.status().message(), " (the server ended the stream before it was read)"));
}

// The segment a batch's arrays are in (null: inline in the message): a ring segment through
// `ring`, else a one-shot segment, mapped and unlinked. Named by the server this stream's
// metadata came from, or not opened at all.
absl::StatusOr<std::shared_ptr<const shm::ShmSegment>> OpenBatchSegment(const v1::Minibatch& m,
                                                                        const ServerMetadata& md,
                                                                        shm::ShmRingReader* ring) {
  if (m.shm_name().empty()) return std::shared_ptr<const shm::ShmSegment>();
  RETURN_IF_ERROR(shm::CheckSegmentName(m.shm_name(), md.shm_prefix, md.shm_key));
  if (m.shm_ring()) {
    if (ring == nullptr) {
      return absl::DataLossError(
          absl::StrCat("batch in ring segment ", m.shm_name(), " but this stream reads no ring"));
    }
    return SegmentGoneIsABrokenStream(ring->Open(m.shm_name(), m.shm_size(), m.shm_ring_serial()));
  }
  return SegmentGoneIsABrokenStream(shm::ShmSegment::OpenAndUnlink(m.shm_name(), m.shm_size()));
}

// Node block i, of type `t`: its arrays viewed in place (features: num_nodes * feat_dim
// elements of `elem` bytes, none when the batch omits them, and then every id a row of the
// type).
absl::StatusOr<NodeBlockData> DecodeNodeBlock(const v1::NodeBlock& n, int i, const NodeTypeInfo& t,
                                              const shm::ShmSegment* shm, bool features_omitted,
                                              int64_t elem) {
  if (n.node_type() != t.name || n.feat_dim() != t.feat_dim) {
    return absl::DataLossError(absl::StrCat("minibatch node block ", i, " is '", n.node_type(),
                                            "' feat_dim ", n.feat_dim(), "; expected '", t.name,
                                            "' feat_dim ", t.feat_dim));
  }
  NodeBlockData nb;
  nb.node_type = n.node_type();
  nb.feat_dim = n.feat_dim();
  ASSIGN_OR_RETURN(nb.ids, View(n.ids(), shm, nb.node_type + " ids"));
  ASSIGN_OR_RETURN(nb.features, View(n.features(), shm, nb.node_type + " features"));
  ASSIGN_OR_RETURN(nb.labels, View(n.labels(), shm, nb.node_type + " labels"));
  if (nb.ids.size % sizeof(int64_t) != 0) {
    return absl::DataLossError(absl::StrCat("minibatch ", nb.node_type, " ids: ", nb.ids.size,
                                            " bytes is not a multiple of 8"));
  }
  nb.num_nodes = static_cast<int64_t>(nb.ids.size / sizeof(int64_t));
  RETURN_IF_ERROR(CheckLength(nb.features, features_omitted ? 0 : nb.num_nodes * nb.feat_dim, elem,
                              nb.node_type + " features"));
  if (features_omitted) {
    // The trainer gathers these rows by id from its own copy: every id must be a row of it.
    for (int64_t j = 0; j < nb.num_nodes; ++j) {
      int64_t id;
      std::memcpy(&id, nb.ids.data + j * 8, 8);
      if (id < 0 || id >= t.num_nodes) {
        return absl::DataLossError(absl::StrCat("minibatch ", nb.node_type, " id ", id, " at row ",
                                                j, " is outside the type's ", t.num_nodes,
                                                " nodes"));
      }
    }
  }
  RETURN_IF_ERROR(CheckLength(nb.labels, nb.num_nodes, 8, nb.node_type + " labels"));
  nb.num_sampled_nodes.assign(n.num_sampled_nodes().begin(), n.num_sampled_nodes().end());
  return nb;
}

// The hop structure of a batch's node blocks: every block has the seed block's number of hops,
// and per-hop counts that add up to its rows.
struct HopLayout {
  size_t hops = 0;
  // Per node block: where the nodes of each hop start ([hops + 2], HopPrefix).
  std::vector<std::vector<int64_t>> node_prefix;
};

absl::StatusOr<HopLayout> NodeHops(const MinibatchData& b) {
  if (b.nodes[static_cast<size_t>(b.seed_block)].num_sampled_nodes.empty()) {
    return absl::DataLossError("minibatch has no num_sampled_nodes (nodes per hop)");
  }
  HopLayout out;
  const size_t hops = b.nodes[static_cast<size_t>(b.seed_block)].num_sampled_nodes.size() - 1;
  out.hops = hops;
  for (const NodeBlockData& nb : b.nodes) {
    if (nb.num_sampled_nodes.size() != hops + 1) {
      return absl::DataLossError(absl::StrCat("minibatch ", nb.node_type, " has ",
                                              nb.num_sampled_nodes.size(),
                                              " num_sampled_nodes; expected ", hops + 1));
    }
    ASSIGN_OR_RETURN(out.node_prefix.emplace_back(),
                     HopPrefix(nb.num_sampled_nodes, nb.num_nodes, nb.node_type + " nodes"));
  }
  return out;
}

// A node batch's seeds: 0 < batch_size <= rows of the seed block, all of them at hop 0.
absl::Status CheckBatchSize(const MinibatchData& b) {
  const int64_t seed_rows = b.nodes[static_cast<size_t>(b.seed_block)].num_nodes;
  if (b.batch_size < 1 || b.batch_size > seed_rows ||
      b.batch_size != b.nodes[static_cast<size_t>(b.seed_block)].num_sampled_nodes[0]) {
    return absl::DataLossError(absl::StrCat(
        "minibatch batch_size ", b.batch_size, " with ", seed_rows, " nodes of the seed type, ",
        b.nodes[static_cast<size_t>(b.seed_block)].num_sampled_nodes[0], " of them at hop 0"));
  }
  return absl::OkStatus();
}

// Edge block i, of type `t`: src and dst of one length, per-hop counts that add up to it, and
// the edges of hop h going into the nodes of hop h from nodes of hops <= h + 1 (data_types.h).
absl::StatusOr<EdgeBlockData> DecodeEdgeBlock(const v1::EdgeBlock& e, int i, const EdgeTypeInfo& t,
                                              const shm::ShmSegment* shm, const HopLayout& layout) {
  if (e.edge_type() != t.name) {
    return absl::DataLossError(absl::StrCat("minibatch edge block ", i, " is '", e.edge_type(),
                                            "'; expected '", t.name, "'"));
  }
  const size_t hops = layout.hops;
  EdgeBlockData eb;
  eb.edge_type = e.edge_type();
  eb.src_block = t.src;
  eb.dst_block = t.dst;
  ASSIGN_OR_RETURN(eb.src, View(e.src(), shm, eb.edge_type + " src"));
  ASSIGN_OR_RETURN(eb.dst, View(e.dst(), shm, eb.edge_type + " dst"));
  eb.num_edges = static_cast<int64_t>(eb.src.size / sizeof(int64_t));
  RETURN_IF_ERROR(CheckLength(eb.src, eb.num_edges, 8, eb.edge_type + " src"));
  RETURN_IF_ERROR(CheckLength(eb.dst, eb.num_edges, 8, eb.edge_type + " dst"));
  eb.num_sampled_edges.assign(e.num_sampled_edges().begin(), e.num_sampled_edges().end());
  if (eb.num_sampled_edges.size() != hops) {
    return absl::DataLossError(absl::StrCat("minibatch ", eb.edge_type, " has ",
                                            eb.num_sampled_edges.size(),
                                            " num_sampled_edges; expected ", hops));
  }
  ASSIGN_OR_RETURN(const std::vector<int64_t> edge_prefix,
                   HopPrefix(eb.num_sampled_edges, eb.num_edges, eb.edge_type + " edges"));
  const std::vector<int64_t>& src_rows = layout.node_prefix[static_cast<size_t>(t.src)];
  const std::vector<int64_t>& dst_rows = layout.node_prefix[static_cast<size_t>(t.dst)];
  for (size_t h = 0; h < hops; ++h) {
    const auto hop = static_cast<int64_t>(h);
    RETURN_IF_ERROR(CheckIndices(eb.src, edge_prefix[h], edge_prefix[h + 1], 0,
                                 src_rows[std::min(h + 2, hops + 1)], eb.edge_type + " src", hop));
    RETURN_IF_ERROR(CheckIndices(eb.dst, edge_prefix[h], edge_prefix[h + 1], dst_rows[h],
                                 dst_rows[h + 1], eb.edge_type + " dst", hop));
  }
  return eb;
}

// The index in md.node_types of a batch's seed type (any node type may seed a stream).
absl::StatusOr<int> SeedBlock(const std::string& seed_type, const ServerMetadata& md) {
  for (size_t i = 0; i < md.node_types.size(); ++i) {
    if (md.node_types[i].name == seed_type) return static_cast<int>(i);
  }
  return absl::DataLossError(
      absl::StrCat("minibatch seed type '", seed_type, "' is not a node type of the graph"));
}

// What a decoded batch's views point into, owned together by MinibatchData::owner: the message
// (inline bytes, names) and the mapped segment (null for an inline batch).
struct BatchOwner {
  std::shared_ptr<const v1::Minibatch> message;
  std::shared_ptr<const shm::ShmSegment> segment;
};

}  // namespace

absl::StatusOr<MinibatchData> DecodeMinibatch(std::shared_ptr<const v1::Minibatch> m,
                                              const ServerMetadata& md, shm::ShmRingReader* ring) {
  ASSIGN_OR_RETURN(std::shared_ptr<const shm::ShmSegment> shm, OpenBatchSegment(*m, md, ring));
  MinibatchData b;
  b.batch_size = m->batch_size();
  b.epoch = m->epoch();
  b.batch_index = m->batch_index();
  b.shared_memory = shm != nullptr;
  b.pinned = shm != nullptr && shm->registered();
  ASSIGN_OR_RETURN(b.feature_dtype, FromProto(m->feature_dtype()));
  b.features_omitted = m->features_omitted();
  const int64_t elem = FeatureBytes(b.feature_dtype);
  if (m->nodes_size() != std::ssize(md.node_types) ||
      m->edges_size() != std::ssize(md.edge_types)) {
    return absl::DataLossError(absl::StrCat("minibatch has ", m->nodes_size(), " node and ",
                                            m->edges_size(), " edge types; the graph has ",
                                            md.node_types.size(), " and ", md.edge_types.size()));
  }
  b.seed_block = md.target;
  const bool link = m->has_link() && !m->link().edge_type().empty();
  if (!link && !m->seed_type().empty() && m->seed_type() != md.target_type) {
    ASSIGN_OR_RETURN(b.seed_block, SeedBlock(m->seed_type(), md));  // a stream of another type
  }
  for (int i = 0; i < m->nodes_size(); ++i) {
    ASSIGN_OR_RETURN(NodeBlockData nb,
                     DecodeNodeBlock(m->nodes(i), i, md.node_types[static_cast<size_t>(i)],
                                     shm.get(), b.features_omitted, elem));
    b.nodes.push_back(std::move(nb));
  }
  ASSIGN_OR_RETURN(const HopLayout layout, NodeHops(b));
  RETURN_IF_ERROR(link ? DecodeLinkLabels(m->link(), md, shm.get(), b) : CheckBatchSize(b));
  for (int i = 0; i < m->edges_size(); ++i) {
    ASSIGN_OR_RETURN(
        EdgeBlockData eb,
        DecodeEdgeBlock(m->edges(i), i, md.edge_types[static_cast<size_t>(i)], shm.get(), layout));
    b.edges.push_back(std::move(eb));
  }
  b.owner = std::make_shared<const BatchOwner>(BatchOwner{std::move(m), std::move(shm)});
  return b;
}

}  // namespace graphshard::client::internal
