#include "partitioner/graph.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "partitioner/internal/edge_scan.h"

namespace graphshard::partitioner {
namespace {

template <typename... Args>
absl::Status Bad(const Args&... what) {
  return absl::InvalidArgumentError(absl::StrCat("input graph: ", what...));
}

absl::Status CheckName(absl::string_view kind, absl::string_view name) {
  if (name.empty() || absl::StrContains(name, "/") || absl::StrContains(name, "__") ||
      name == "." || name == "..") {
    return Bad(kind, " name \"", name, "\" must be non-empty, without \"/\" or \"__\"");
  }
  return absl::OkStatus();
}

absl::Status ValidateNodeType(const NodeTypeData& t) {
  RETURN_IF_ERROR(CheckName("node type", t.name));
  if (t.num_nodes < 0 || t.feat_dim < 0 || t.num_classes < 0) {
    return Bad("node type ", t.name, ": negative count");
  }
  if (t.features.size() != t.num_nodes * t.feat_dim) {
    return Bad("node type ", t.name, ": ", t.features.size(), " feature values, expected ",
               t.num_nodes, " x ", t.feat_dim);
  }
  if (!t.labels.empty() && t.labels.size() != t.num_nodes) {
    return Bad("node type ", t.name, ": ", t.labels.size(), " labels for ", t.num_nodes, " nodes");
  }
  for (int64_t v = 0; v < t.labels.size(); ++v) {
    if (t.labels[v] >= t.num_classes) {
      return Bad("node type ", t.name, ": label ", t.labels[v], " of node ", v,
                 " is not below num_classes ", t.num_classes);
    }
  }
  if (!t.time.empty() && t.time.size() != t.num_nodes) {
    return Bad("node type ", t.name, ": ", t.time.size(), " node times for ", t.num_nodes,
               " nodes");
  }
  std::vector<bool> seen;
  for (const auto& [name, ids] : t.splits) {
    if (name != "train" && name != "val" && name != "test") {
      return Bad("unknown split \"", name, "\" (train, val, test)");
    }
    seen.assign(static_cast<size_t>(t.num_nodes), false);
    for (int64_t i = 0; i < ids.size(); ++i) {
      const int64_t id = ids[i];
      if (id < 0 || id >= t.num_nodes) {
        return Bad("split ", name, " of type ", t.name, " has node id ", id, " outside [0, ",
                   t.num_nodes, ")");
      }
      if (seen[id]) return Bad("split ", name, " of type ", t.name, " lists node ", id, " twice");
      seen[id] = true;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateEdgeType(const Graph& g, const EdgeTypeData& t) {
  RETURN_IF_ERROR(CheckName("relation", t.rel));
  const int s = g.NodeTypeIndex(t.src), d = g.NodeTypeIndex(t.dst);
  if (s < 0 || d < 0) return Bad("edge type ", t.Name(), " names an unknown node type");
  if (t.src_ids.size() != t.dst_ids.size()) {
    return Bad("edge type ", t.Name(), ": ", t.src_ids.size(), " sources but ", t.dst_ids.size(),
               " targets");
  }
  if (!t.time.empty() && t.time.size() != t.src_ids.size()) {
    return Bad("edge type ", t.Name(), ": ", t.time.size(), " edge times for ", t.src_ids.size(),
               " edges");
  }
  const int64_t ns = g.node_types[s].num_nodes, nd = g.node_types[d].num_nodes;
  int64_t bad = -1;
  internal::ScanEdges(t, nullptr, [&](int64_t e) {
    const int64_t a = t.src_ids[e], b = t.dst_ids[e];
    if (bad < 0 && (a < 0 || a >= ns || b < 0 || b >= nd)) bad = e;
  });
  if (bad >= 0) {
    return Bad("edge type ", t.Name(), ": edge ", bad, " (", t.src_ids[bad], " -> ", t.dst_ids[bad],
               ") has a node id out of range (", ns, " ", t.src, ", ", nd, " ", t.dst, ")");
  }
  for (const auto& [name, split] : t.splits) {
    if (name != "train" && name != "val" && name != "test") {
      return Bad("edge type ", t.Name(), ": unknown edge split \"", name, "\" (train, val, test)");
    }
    if (split.src_ids.size() != split.dst_ids.size()) {
      return Bad("edge type ", t.Name(), ": edge split ", name, " has ", split.src_ids.size(),
                 " sources but ", split.dst_ids.size(), " targets");
    }
    if (!split.time.empty() && split.time.size() != split.src_ids.size()) {
      return Bad("edge type ", t.Name(), ": edge split ", name, " has ", split.time.size(),
                 " times for ", split.src_ids.size(), " edges");
    }
    for (int64_t i = 0; i < split.src_ids.size(); ++i) {
      const int64_t a = split.src_ids[i], b = split.dst_ids[i];
      if (a < 0 || a >= ns || b < 0 || b >= nd) {
        return Bad("edge type ", t.Name(), ": edge split ", name, " edge ", i, " (", a, " -> ", b,
                   ") has a node id out of range (", ns, " ", t.src, ", ", nd, " ", t.dst, ")");
      }
    }
  }
  return absl::OkStatus();
}

// keep[e] is false for edges equal to an earlier one (same src and dst), found by a counting
// sort on src and a sort of each row by (dst, position): O(E) memory, no hashing.
std::vector<bool> FirstOccurrences(absl::Span<const int64_t> src, absl::Span<const int64_t> dst,
                                   int64_t num_src) {
  std::vector<int64_t> start(static_cast<size_t>(num_src) + 1, 0);
  for (int64_t s : src) ++start[s + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int64_t> order(src.size());
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (size_t e = 0; e < src.size(); ++e) order[fill[src[e]]++] = static_cast<int64_t>(e);
  }
  std::vector<bool> keep(src.size(), true);
  for (int64_t s = 0; s < num_src; ++s) {
    auto b = order.begin() + start[s], end = order.begin() + start[s + 1];
    if (end - b < 2) continue;
    std::sort(b, end,
              [&](int64_t x, int64_t y) { return dst[x] != dst[y] ? dst[x] < dst[y] : x < y; });
    for (auto it = b + 1; it != end; ++it) keep[*it] = dst[*it] != dst[*(it - 1)];
  }
  return keep;
}

struct EdgeLists {
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  std::vector<int64_t> time;  // empty when the edge type has no times
};

EdgeLists Filter(absl::Span<const int64_t> src, absl::Span<const int64_t> dst,
                 absl::Span<const int64_t> time, const std::vector<bool>& keep) {
  EdgeLists out;
  for (size_t e = 0; e < src.size(); ++e) {
    if (!keep[e]) continue;
    out.src.push_back(src[e]);
    out.dst.push_back(dst[e]);
    if (!time.empty()) out.time.push_back(time[e]);
  }
  return out;
}

void Assign(EdgeTypeData& t, EdgeLists lists) {
  t.src_ids = Array<int64_t>::Owned(std::move(lists.src));
  t.dst_ids = Array<int64_t>::Owned(std::move(lists.dst));
  if (!t.time.empty()) t.time = Array<int64_t>::Owned(std::move(lists.time));
}

}  // namespace

void ReleaseMappedPages(const void* begin, size_t bytes) {
  static const uintptr_t kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t b = reinterpret_cast<uintptr_t>(begin);
  const uintptr_t first = (b + kPage - 1) / kPage * kPage, last = (b + bytes) / kPage * kPage;
  if (last > first) {
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  }
}

int Graph::NodeTypeIndex(absl::string_view name) const {
  for (size_t i = 0; i < node_types.size(); ++i) {
    if (node_types[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int64_t Graph::TotalNodes() const {
  int64_t n = 0;
  for (const NodeTypeData& t : node_types) n += t.num_nodes;
  return n;
}

int64_t Graph::TotalEdges() const {
  int64_t n = 0;
  for (const EdgeTypeData& t : edge_types) n += t.num_edges();
  return n;
}

Graph HomogeneousGraph(int64_t num_nodes, std::vector<int64_t> src, std::vector<int64_t> dst) {
  Graph g;
  NodeTypeData& n = g.node_types.emplace_back();
  n.name = kHomogeneousNodeType;
  n.num_nodes = num_nodes;
  EdgeTypeData& e = g.edge_types.emplace_back();
  e.src = e.dst = kHomogeneousNodeType;
  e.rel = kHomogeneousRelation;
  e.src_ids = Array<int64_t>::Owned(std::move(src));
  e.dst_ids = Array<int64_t>::Owned(std::move(dst));
  return g;
}

absl::Status ValidateGraph(const Graph& g) {
  if (g.node_types.empty()) return Bad("no node types");
  std::set<std::string> names;
  for (const NodeTypeData& t : g.node_types) {
    RETURN_IF_ERROR(ValidateNodeType(t));
    if (!names.insert(t.name).second) return Bad("node type ", t.name, " appears twice");
  }
  names.clear();
  for (const EdgeTypeData& t : g.edge_types) {
    RETURN_IF_ERROR(ValidateEdgeType(g, t));
    if (!names.insert(t.Name()).second) return Bad("edge type ", t.Name(), " appears twice");
  }
  return absl::OkStatus();
}

absl::Status TransformEdges(Graph& g, const EdgeTransformOptions& o) {
  RETURN_IF_ERROR(ValidateGraph(g));
  std::vector<EdgeTypeData> added;
  for (EdgeTypeData& t : g.edge_types) {
    const int64_t num_src = g.node_types[g.NodeTypeIndex(t.src)].num_nodes;
    if (o.drop_self_loops && t.src == t.dst) {
      std::vector<bool> keep(static_cast<size_t>(t.num_edges()));
      for (int64_t e = 0; e < t.num_edges(); ++e) keep[e] = t.src_ids[e] != t.dst_ids[e];
      Assign(t, Filter(t.src_ids.span(), t.dst_ids.span(), t.time.span(), keep));
    }
    if (o.undirected && t.src == t.dst) {
      EdgeLists both;
      both.src.assign(t.src_ids.span().begin(), t.src_ids.span().end());
      both.src.insert(both.src.end(), t.dst_ids.span().begin(), t.dst_ids.span().end());
      both.dst.assign(t.dst_ids.span().begin(), t.dst_ids.span().end());
      both.dst.insert(both.dst.end(), t.src_ids.span().begin(), t.src_ids.span().end());
      if (!t.time.empty()) {  // a reversed edge keeps its time
        both.time.assign(t.time.span().begin(), t.time.span().end());
        both.time.insert(both.time.end(), t.time.span().begin(), t.time.span().end());
      }
      std::vector<bool> keep = FirstOccurrences(both.src, both.dst, num_src);
      Assign(t, Filter(both.src, both.dst, both.time, keep));
    } else if (o.dedup) {
      std::vector<bool> keep = FirstOccurrences(t.src_ids.span(), t.dst_ids.span(), num_src);
      Assign(t, Filter(t.src_ids.span(), t.dst_ids.span(), t.time.span(), keep));
    }
    if (o.undirected && t.src != t.dst) {
      EdgeTypeData rev;
      rev.src = t.dst;
      rev.rel = absl::StrCat("rev_", t.rel);
      rev.dst = t.src;
      rev.src_ids = t.dst_ids;
      rev.dst_ids = t.src_ids;
      rev.time = t.time;
      added.push_back(std::move(rev));
    }
  }
  // The edges were valid and keep their ids: only the added names can clash.
  std::set<std::string> names;
  for (const EdgeTypeData& t : g.edge_types) names.insert(t.Name());
  for (EdgeTypeData& t : added) {
    RETURN_IF_ERROR(CheckName("relation", t.rel));
    if (!names.insert(t.Name()).second) return Bad("edge type ", t.Name(), " appears twice");
    g.edge_types.push_back(std::move(t));
  }
  return absl::OkStatus();
}

}  // namespace graphshard::partitioner
