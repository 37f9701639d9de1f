#include "trainer/internal/wire.h"

#include <bit>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace graphshard::trainer::internal {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; add byte swapping for this host");

absl::Status CheckIndices(absl::Span<const int64_t> idx, int64_t n, absl::string_view what) {
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= n) {
      return absl::DataLossError(absl::StrCat("minibatch ", what, "[", i, "] = ", idx[i],
                                              " is outside [0, num_nodes ", n, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> DecodeInt64s(const std::string& bytes,
                                                  absl::string_view what) {
  if (bytes.size() % sizeof(int64_t) != 0) {
    return absl::DataLossError(
        absl::StrCat(what, ": ", bytes.size(), " bytes is not a multiple of 8 (int64 LE)"));
  }
  std::vector<int64_t> v(bytes.size() / sizeof(int64_t));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::string EncodeInt64s(absl::Span<const int64_t> values) {
  std::string s(values.size() * sizeof(int64_t), '\0');
  if (!values.empty()) std::memcpy(s.data(), values.data(), s.size());
  return s;
}

absl::StatusOr<ServerMetadata> DecodeMetadata(const v1::Metadata& m) {
  ServerMetadata out;
  out.part = m.part();
  out.num_parts = m.num_parts();
  out.num_nodes = m.num_nodes();
  out.part_offsets.assign(m.part_offsets().begin(), m.part_offsets().end());
  out.feat_dim = m.feat_dim();
  out.num_classes = m.num_classes();
  if (out.num_parts < 1 || out.part < 0 || out.part >= out.num_parts) {
    return absl::DataLossError(
        absl::StrCat("metadata: part ", out.part, " of num_parts ", out.num_parts));
  }
  if (out.feat_dim < 1 || out.num_classes < 1) {
    return absl::DataLossError(absl::StrCat("metadata: feat_dim ", out.feat_dim, ", num_classes ",
                                            out.num_classes, " (both must be >= 1)"));
  }
  if (!out.part_offsets.empty() &&
      out.part_offsets.size() != static_cast<size_t>(out.num_parts) + 1) {
    return absl::DataLossError(absl::StrCat("metadata: ", out.part_offsets.size(),
                                            " part_offsets for ", out.num_parts, " parts"));
  }
  return out;
}

absl::StatusOr<MinibatchData> DecodeMinibatch(v1::Minibatch& m,
                                              absl::Span<const int64_t> requested_seeds) {
  if (m.nodes_size() != 1 || m.edges_size() != 1 || !m.shm_name().empty() ||
      m.feature_dtype() != v1::FLOAT32) {
    return absl::DataLossError(absl::StrCat(
        "minibatch: this trainer takes homogeneous float32 batches inline (got ", m.nodes_size(),
        " node types, ", m.edges_size(), " edge types)"));
  }
  const v1::NodeBlock& nodes = m.nodes(0);
  const v1::EdgeBlock& edges = m.edges(0);
  MinibatchData b;
  b.batch_size = m.batch_size();
  b.feat_dim = nodes.feat_dim();
  ASSIGN_OR_RETURN(b.node_ids, DecodeInt64s(nodes.ids().data(), "minibatch node ids"));
  ASSIGN_OR_RETURN(b.labels, DecodeInt64s(nodes.labels().data(), "minibatch labels"));
  ASSIGN_OR_RETURN(b.edge_src, DecodeInt64s(edges.src().data(), "minibatch edge src"));
  ASSIGN_OR_RETURN(b.edge_dst, DecodeInt64s(edges.dst().data(), "minibatch edge dst"));
  const std::string& features = nodes.features().data();
  const int64_t n = b.num_nodes();
  if (b.batch_size != static_cast<int64_t>(requested_seeds.size()) || b.batch_size > n) {
    return absl::DataLossError(absl::StrCat("minibatch batch_size ", b.batch_size, " for ",
                                            requested_seeds.size(), " seeds and ", n, " nodes"));
  }
  for (size_t i = 0; i < requested_seeds.size(); ++i) {
    if (b.node_ids[i] != requested_seeds[i]) {
      return absl::DataLossError(absl::StrCat("minibatch node_ids[", i, "] = ", b.node_ids[i],
                                              " but seed ", i, " is ", requested_seeds[i],
                                              " (seeds must come first, in order)"));
    }
  }
  if (b.feat_dim < 1 || features.size() != static_cast<size_t>(n * b.feat_dim) * 4) {
    return absl::DataLossError(absl::StrCat("minibatch features: ", features.size(),
                                            " bytes for ", n, " nodes x feat_dim ", b.feat_dim,
                                            " float32"));
  }
  if (static_cast<int64_t>(b.labels.size()) != n) {
    return absl::DataLossError(
        absl::StrCat("minibatch labels: ", b.labels.size(), " for ", n, " nodes"));
  }
  if (b.edge_src.size() != b.edge_dst.size()) {
    return absl::DataLossError(absl::StrCat("minibatch edge_src has ", b.edge_src.size(),
                                            " entries, edge_dst ", b.edge_dst.size()));
  }
  RETURN_IF_ERROR(CheckIndices(b.edge_src, n, "edge_src"));
  RETURN_IF_ERROR(CheckIndices(b.edge_dst, n, "edge_dst"));
  b.features.resize(static_cast<size_t>(n * b.feat_dim));
  if (!b.features.empty()) std::memcpy(b.features.data(), features.data(), features.size());
  return b;
}

}  // namespace graphshard::trainer::internal
