#include "partitioner/input_graph.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace graphshard::partitioner {

absl::Status ValidateInputGraph(const InputGraph& g) {
  auto bad = [](auto&&... what) { return absl::InvalidArgumentError(absl::StrCat(what...)); };
  if (g.num_nodes < 0) return bad("input graph: num_nodes is negative");
  if (g.src.size() != g.dst.size()) {
    return bad("input graph: ", g.src.size(), " edge sources but ", g.dst.size(), " targets");
  }
  for (size_t e = 0; e < g.src.size(); ++e) {
    if (g.src[e] < 0 || g.src[e] >= g.num_nodes || g.dst[e] < 0 || g.dst[e] >= g.num_nodes) {
      return bad("input graph: edge ", e, " (", g.src[e], " -> ", g.dst[e],
                 ") has a node id outside [0, ", g.num_nodes, ")");
    }
  }
  if (g.feat_dim < 0 || static_cast<int64_t>(g.features.size()) != g.num_nodes * g.feat_dim) {
    return bad("input graph: ", g.features.size(), " feature values, expected num_nodes * ",
               "feat_dim = ", g.num_nodes, " * ", g.feat_dim);
  }
  if (static_cast<int64_t>(g.labels.size()) != g.num_nodes) {
    return bad("input graph: ", g.labels.size(), " labels for ", g.num_nodes, " nodes");
  }
  for (size_t v = 0; v < g.labels.size(); ++v) {
    if (g.labels[v] < -1 || g.labels[v] >= g.num_classes) {
      return bad("input graph: label ", g.labels[v], " of node ", v, " is outside [-1, ",
                 g.num_classes, ")");
    }
  }
  std::vector<bool> seen;
  for (const auto& [name, ids] : g.splits) {
    if (name != "train" && name != "val" && name != "test") {
      return bad("input graph: unknown split \"", name, "\" (train, val, test)");
    }
    seen.assign(static_cast<size_t>(g.num_nodes), false);
    for (int64_t id : ids) {
      if (id < 0 || id >= g.num_nodes) {
        return bad("input graph: split ", name, " has node id ", id, " outside [0, ", g.num_nodes,
                   ")");
      }
      if (seen[id]) return bad("input graph: split ", name, " lists node ", id, " twice");
      seen[id] = true;
    }
  }
  return absl::OkStatus();
}

void MakeUndirected(InputGraph& g) {
  const size_t e = g.src.size();
  std::vector<int64_t> src(2 * e), dst(2 * e);
  for (size_t i = 0; i < e; ++i) {
    src[i] = g.src[i];
    dst[i] = g.dst[i];
    src[e + i] = g.dst[i];
    dst[e + i] = g.src[i];
  }
  // Keep the first occurrence of each (src, dst): sort positions by (src, dst, position).
  std::vector<size_t> order(2 * e);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (src[a] != src[b]) return src[a] < src[b];
    if (dst[a] != dst[b]) return dst[a] < dst[b];
    return a < b;
  });
  std::vector<bool> keep(2 * e, false);
  for (size_t k = 0; k < order.size(); ++k) {
    size_t i = order[k];
    keep[i] = k == 0 || src[order[k - 1]] != src[i] || dst[order[k - 1]] != dst[i];
  }
  g.src.clear();
  g.dst.clear();
  for (size_t i = 0; i < 2 * e; ++i) {
    if (!keep[i]) continue;
    g.src.push_back(src[i]);
    g.dst.push_back(dst[i]);
  }
}

}  // namespace graphshard::partitioner
