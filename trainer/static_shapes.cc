#include "trainer/static_shapes.h"

#include <ATen/Parallel.h>

#include <atomic>
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

std::vector<int64_t> Prefix(const std::vector<int64_t>& counts) {
  std::vector<int64_t> prefix = {0};
  for (int64_t c : counts) prefix.push_back(prefix.back() + c);
  return prefix;
}

// Copies `n` edges' node indexes from `in` to `out`, each moved to its hop's new segment: an
// index in [old_start[h], old_start[h + 1]) gains new_start[h] - old_start[h]. False when an
// index is outside [0, old_start.back()).
bool Remap(const int64_t* in, int64_t* out, int64_t n, const std::vector<int64_t>& old_start,
           const std::vector<int64_t>& new_start) {
  const int64_t num_nodes = old_start.back();
  const size_t hops = old_start.size() - 1;
  std::vector<int64_t> step(hops, 0);  // shift of hop h minus shift of hop h - 1
  for (size_t h = 0; h < hops; ++h) {
    step[h] = (new_start[h] - old_start[h]) - (h == 0 ? 0 : new_start[h - 1] - old_start[h - 1]);
  }
  std::atomic<bool> ok{true};
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    bool good = true;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t v = in[i];
      good &= v >= 0 && v < num_nodes;
      int64_t shift = step[0];
      for (size_t h = 1; h < hops; ++h) shift += v >= old_start[h] ? step[h] : 0;
      out[i] = v + shift;
    }
    if (!good) ok = false;
  });
  return ok;
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

absl::StatusOr<BatchTensors> StaticShapes::Pad(const BatchTensors& batch, bool pinned) {
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

  const std::vector<int64_t> old_start = Prefix(nodes);
  const std::vector<int64_t> new_start = Prefix(node_caps_);
  const std::vector<int64_t> old_edge = Prefix(edges);
  const std::vector<int64_t> new_edge = Prefix(edge_caps_);
  const int64_t num_nodes = new_start.back();
  const int64_t num_edges = new_edge.back();
  const auto options = [pinned](const torch::Tensor& like) {
    return like.options().pinned_memory(pinned);
  };

  BatchTensors out;
  out.seed_type = 0;
  out.x_are_ids = batch.x_are_ids;
  out.tiers = batch.tiers;
  out.seeds = batch.seeds;
  out.batch_size = node_caps_[0];
  out.num_nodes = {num_nodes};
  out.nodes_before_hop = {new_start};
  out.edges_before_hop = {new_edge};

  // Nodes: each hop's rows at its segment's start, the rest the first node's.
  const torch::Tensor& x = batch.x[0];
  std::vector<int64_t> x_sizes = x.sizes().vec();
  x_sizes[0] = num_nodes;
  torch::Tensor px = torch::empty(x_sizes, options(x));
  for (size_t h = 0; h < nodes.size(); ++h) {
    const int64_t n = nodes[h];
    if (n > 0) px.slice(0, new_start[h], new_start[h] + n).copy_(x.slice(0, old_start[h], old_start[h] + n));
    torch::Tensor pad = px.slice(0, new_start[h] + n, new_start[h + 1]);
    if (old_start.back() > 0) {
      pad.copy_(x.slice(0, 0, 1).expand_as(pad));
    } else {
      pad.zero_();
    }
  }
  out.x = {px};

  // Labels: the real seeds', then ignored.
  torch::Tensor py = torch::full({node_caps_[0]}, kIgnoreLabel, options(batch.y));
  const int64_t labelled = std::min<int64_t>(batch.y.size(0), node_caps_[0]);
  py.slice(0, 0, labelled).copy_(batch.y.slice(0, 0, labelled));
  out.y = py;

  // Edges: each hop's real edges remapped, then padding edges between padding nodes.
  const EdgeTensors& e = batch.edges[0];
  const torch::Tensor src = e.src.contiguous();
  const torch::Tensor dst = e.dst.contiguous();
  torch::Tensor psrc = torch::empty({num_edges}, options(src));
  torch::Tensor pdst = torch::empty({num_edges}, options(dst));
  for (size_t k = 0; k < edges.size(); ++k) {  // hop k + 1
    const int64_t n = edges[k];
    const int64_t at = new_edge[k];
    if (n > 0 && (!Remap(src.data_ptr<int64_t>() + old_edge[k], psrc.data_ptr<int64_t>() + at, n,
                         old_start, new_start) ||
                  !Remap(dst.data_ptr<int64_t>() + old_edge[k], pdst.data_ptr<int64_t>() + at, n,
                         old_start, new_start))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--static-shapes: an edge of hop ", k + 1, " names a node outside the batch's ",
          old_start.back(), " nodes (hops of ", absl::StrJoin(nodes, ", "), ")"));
    }
    psrc.slice(0, at + n, new_edge[k + 1]).fill_(new_start[k + 2] - 1);  // hop k + 1's last
    pdst.slice(0, at + n, new_edge[k + 1]).fill_(new_start[k + 1] - 1);  // hop k's last
  }
  out.edges = {{0, 0, psrc, pdst}};
  return out;
}

}  // namespace graphshard::trainer
