#include "trainer/static_shapes.h"

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphshard::trainer {
namespace {

constexpr int64_t kIgnoreLabel = -100;  // torch's cross_entropy ignore_index default

std::vector<int64_t> Counts(const std::vector<int64_t>& prefix) {
  std::vector<int64_t> counts;
  for (size_t i = 1; i < prefix.size(); ++i) counts.push_back(prefix[i] - prefix[i - 1]);
  return counts;
}

}  // namespace

StaticShapes::StaticShapes(double headroom, int64_t align) : headroom_(headroom), align_(align) {}

bool StaticShapes::Grow(std::vector<int64_t>& caps, const std::vector<int64_t>& counts,
                        int64_t spare) const {
  bool grew = false;
  if (caps.size() < counts.size()) caps.resize(counts.size(), 0);
  for (size_t h = 0; h < counts.size(); ++h) {
    const int64_t need = counts[h] + spare;
    if (need <= caps[h]) continue;
    const auto wanted = static_cast<int64_t>(std::ceil(static_cast<double>(need) * (1 + headroom_)));
    caps[h] = (wanted + align_ - 1) / align_ * align_;
    grew = true;
  }
  return grew;
}

StaticShapes::Totals StaticShapes::totals() const {
  return {.batches = batches_.load(std::memory_order_relaxed),
          .real_nodes = real_nodes_.load(std::memory_order_relaxed),
          .padded_nodes = padded_nodes_.load(std::memory_order_relaxed),
          .real_edges = real_edges_.load(std::memory_order_relaxed),
          .padded_edges = padded_edges_.load(std::memory_order_relaxed)};
}

absl::StatusOr<BatchTensors> StaticShapes::Pad(const BatchTensors& batch) {
  if (batch.link.present || batch.x.size() != 1 || batch.edges.size() != 1 ||
      batch.nodes_before_hop.size() != 1 || batch.edges_before_hop.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--static-shapes pads homogeneous node batches; this one has ", batch.x.size(),
                     " node types, ", batch.edges.size(), " edge types",
                     batch.link.present ? " and supervision edges" : ""));
  }
  std::vector<int64_t> nodes = Counts(batch.nodes_before_hop[0]);  // per hop, seeds first
  std::vector<int64_t> edges = Counts(batch.edges_before_hop[0]);  // hop 1 first
  if (nodes.size() != edges.size() + 1) {
    return absl::InvalidArgumentError(absl::StrCat("--static-shapes: a batch of ", nodes.size(),
                                                   " node hops and ", edges.size(), " edge hops"));
  }
  // A batch with fewer hops than earlier ones (nothing sampled past some hop) has empty ones.
  nodes.resize(std::max(nodes.size(), node_caps_.size()), 0);
  edges.resize(std::max(edges.size(), edge_caps_.size()), 0);
  const bool node_grew = Grow(node_caps_, nodes, /*spare=*/1);
  const bool edge_grew = Grow(edge_caps_, edges, /*spare=*/0);
  if ((node_grew || edge_grew) && !first_) ++grew_;
  first_ = false;

  const std::vector<int64_t> old_start = PrefixSums(nodes);
  const std::vector<int64_t> new_start = PrefixSums(node_caps_);
  const std::vector<int64_t> old_edge = PrefixSums(edges);
  const std::vector<int64_t> new_edge = PrefixSums(edge_caps_);
  const int64_t num_nodes = new_start.back();
  batches_.fetch_add(1, std::memory_order_relaxed);
  real_nodes_.fetch_add(old_start.back(), std::memory_order_relaxed);
  padded_nodes_.fetch_add(num_nodes, std::memory_order_relaxed);
  real_edges_.fetch_add(old_edge.back(), std::memory_order_relaxed);
  padded_edges_.fetch_add(new_edge.back(), std::memory_order_relaxed);

  BatchTensors out;
  out.seed_type = 0;
  out.x_are_ids = batch.x_are_ids;
  out.tiers = batch.tiers;
  out.seeds = batch.seeds;
  out.batch_size = node_caps_[0];
  out.num_nodes = {num_nodes};
  out.nodes_before_hop = {new_start};
  out.edges_before_hop = {new_edge};

  // Nodes (ids or rows): each hop's at its segment's start, the rest the first node's. A few
  // copies per hop where the tensors are (on a GPU: queued by the pipeline's thread).
  const torch::Tensor& x = batch.x[0];
  std::vector<int64_t> x_sizes = x.sizes().vec();
  x_sizes[0] = num_nodes;
  torch::Tensor px = torch::empty(x_sizes, x.options());
  for (size_t h = 0; h < nodes.size(); ++h) {
    const int64_t n = nodes[h];
    if (n > 0) {
      px.slice(0, new_start[h], new_start[h] + n)
          .copy_(x.slice(0, old_start[h], old_start[h] + n));
    }
    torch::Tensor pad = px.slice(0, new_start[h] + n, new_start[h + 1]);
    if (old_start.back() > 0) {
      pad.copy_(x.slice(0, 0, 1).expand_as(pad));
    } else {
      pad.zero_();
    }
  }
  out.x = {px};

  // Labels: the real seeds', then ignored.
  torch::Tensor py = torch::full({node_caps_[0]}, kIgnoreLabel, batch.y.options());
  const int64_t labelled = std::min<int64_t>(batch.y.size(0), node_caps_[0]);
  py.slice(0, 0, labelled).copy_(batch.y.slice(0, 0, labelled));
  out.y = py;

  // Edges: every node index moved to its hop's new segment (new_of_old: old index -> new), each
  // hop's edges at its segment's start, then padding edges between padding nodes. Indexes are
  // within the batch's nodes: the wire format checked them (client/internal/wire.cc).
  const EdgeTensors& e = batch.edges[0];
  torch::Tensor new_of_old = torch::arange(old_start.back(), e.src.options());
  for (size_t h = 1; h < nodes.size(); ++h) {
    if (nodes[h] > 0) {
      new_of_old.slice(0, old_start[h], old_start[h + 1]).add_(new_start[h] - old_start[h]);
    }
  }
  const torch::Tensor src = new_of_old.index_select(0, e.src);
  const torch::Tensor dst = new_of_old.index_select(0, e.dst);
  torch::Tensor psrc = torch::empty({new_edge.back()}, e.src.options());
  torch::Tensor pdst = torch::empty({new_edge.back()}, e.dst.options());
  for (size_t k = 0; k < edges.size(); ++k) {  // hop k + 1
    const int64_t n = edges[k];
    const int64_t at = new_edge[k];
    if (n > 0) {
      psrc.slice(0, at, at + n).copy_(src.slice(0, old_edge[k], old_edge[k] + n));
      pdst.slice(0, at, at + n).copy_(dst.slice(0, old_edge[k], old_edge[k] + n));
    }
    psrc.slice(0, at + n, new_edge[k + 1]).fill_(new_start[k + 2] - 1);  // hop k + 1's last
    pdst.slice(0, at + n, new_edge[k + 1]).fill_(new_start[k + 1] - 1);  // hop k's last
  }
  out.edges = {{0, 0, psrc, pdst}};
  return out;
}

}  // namespace graphshard::trainer
