#include "partitioner/internal/metis_partition.h"

#include <metis.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "partitioner/internal/edge_scan.h"
#include "partitioner/internal/progress.h"
#include "partitioner/partition.h"

namespace graphshard::partitioner::internal {
namespace {

static_assert(sizeof(idx_t) == 4, "libmetis 5.1 in Debian: 32-bit idx_t");
constexpr int64_t kIdxMax = std::numeric_limits<idx_t>::max();

absl::Status TooLarge(absl::string_view what, int64_t count) {
  return absl::InvalidArgumentError(absl::StrCat(
      "graph too large for METIS: ", count, " ", what, " (libmetis uses 32-bit idx_t: at most ",
      kIdxMax, "); partition it with --method stream (or --method random) instead"));
}

// Symmetric adjacency in METIS' CSR form (no self loops, no repeats).
struct Adjacency {
  std::vector<idx_t> xadj;
  std::vector<idx_t> adjncy;
};

// Counts, then fills, both directions of every edge of every relation; then sorts and dedups
// each row in place. Memory: 4 bytes per directed edge and direction, plus 8 per node.
absl::StatusOr<Adjacency> BuildAdjacency(const Graph& g, const std::vector<int64_t>& offset,
                                         const ProgressSink& log) {
  const int64_t n = offset.back();
  std::vector<int64_t> start(static_cast<size_t>(n) + 1, 0);
  Progress progress(log, "metis: symmetric adjacency", 2 * g.TotalEdges());
  for (const EdgeTypeData& t : g.edge_types) {
    const int64_t os = offset[g.NodeTypeIndex(t.src)], od = offset[g.NodeTypeIndex(t.dst)];
    ScanEdges(t, &progress, [&](int64_t e) {
      const int64_t u = os + t.src_ids[e], v = od + t.dst_ids[e];
      if (u == v) return;
      ++start[u + 1];
      ++start[v + 1];
    });
  }
  for (int64_t v = 0; v < n; ++v) start[v + 1] += start[v];
  Adjacency a;
  a.adjncy.resize(static_cast<size_t>(start[n]));
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (const EdgeTypeData& t : g.edge_types) {
      const int64_t os = offset[g.NodeTypeIndex(t.src)], od = offset[g.NodeTypeIndex(t.dst)];
      ScanEdges(t, &progress, [&](int64_t e) {
        const int64_t u = os + t.src_ids[e], v = od + t.dst_ids[e];
        if (u == v) return;
        a.adjncy[fill[u]++] = static_cast<idx_t>(v);
        a.adjncy[fill[v]++] = static_cast<idx_t>(u);
      });
    }
  }
  progress.Finish();
  Progress dedup(log, "metis: sort and dedup adjacency", n);
  a.xadj.resize(static_cast<size_t>(n) + 1);
  int64_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    auto b = a.adjncy.begin() + start[v], e = a.adjncy.begin() + start[v + 1];
    std::sort(b, e);
    e = std::unique(b, e);
    a.xadj[v] = static_cast<idx_t>(out);
    out = std::copy(b, e, a.adjncy.begin() + out) - a.adjncy.begin();
    if (out > kIdxMax) return TooLarge("symmetric adjacency entries", out);
    dedup.Add(1);
  }
  a.xadj[n] = static_cast<idx_t>(out);
  dedup.Finish();
  // Give back the repeats' half (a graph stored in both directions has every pair twice)
  // before METIS allocates its own copies.
  a.adjncy.resize(static_cast<size_t>(out));
  a.adjncy.shrink_to_fit();
  return a;
}

// One constraint per non-empty (node type, in train split) class, each node weighing 1 in its
// class; plus in-degree (the edges stored with the node) if the graph has edges.
struct VertexWeights {
  idx_t ncon = 0;
  std::vector<idx_t> vwgt;  // [n * ncon]
};

VertexWeights BuildWeights(const Graph& g, const std::vector<int64_t>& offset) {
  const int64_t n = offset.back();
  std::vector<int> cls(static_cast<size_t>(n));
  std::vector<int64_t> class_size(2 * g.node_types.size(), 0);
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    const NodeTypeData& nt = g.node_types[t];
    for (int64_t v = 0; v < nt.num_nodes; ++v) cls[offset[t] + v] = static_cast<int>(2 * t);
    auto train = nt.splits.find("train");
    if (train == nt.splits.end()) continue;
    for (int64_t id : train->second.span()) cls[offset[t] + id] = static_cast<int>(2 * t + 1);
  }
  for (int c : cls) ++class_size[c];
  std::vector<int> column(class_size.size(), -1);
  VertexWeights w;
  for (size_t c = 0; c < class_size.size(); ++c) {
    if (class_size[c] > 0) column[c] = w.ncon++;
  }
  const idx_t degree_col = g.TotalEdges() > 0 ? w.ncon++ : -1;
  w.vwgt.assign(static_cast<size_t>(n * w.ncon), 0);
  for (int64_t v = 0; v < n; ++v) w.vwgt[v * w.ncon + column[cls[v]]] = 1;
  if (degree_col >= 0) {
    for (const EdgeTypeData& t : g.edge_types) {
      const int64_t od = offset[g.NodeTypeIndex(t.dst)];
      ScanEdges(t, nullptr,
                [&](int64_t e) { ++w.vwgt[(od + t.dst_ids[e]) * w.ncon + degree_col]; });
    }
  }
  return w;
}

absl::Status MetisError(int rc) {
  const char* what = rc == METIS_ERROR_INPUT    ? "input error"
                     : rc == METIS_ERROR_MEMORY ? "out of memory"
                                                : "error";
  return absl::InternalError(absl::StrCat("METIS_PartGraphKway failed: ", what, " (", rc, ")"));
}

}  // namespace

absl::StatusOr<std::vector<int>> MetisPartition(const Graph& g, const MetisOptions& o) {
  std::vector<int64_t> offset{0};
  for (const NodeTypeData& t : g.node_types) offset.push_back(offset.back() + t.num_nodes);
  const int64_t n = offset.back();
  if (n > kIdxMax) return TooLarge("nodes", n);
  if (g.TotalEdges() >= kMetisMaxEdges) return TooLarge("directed edges", g.TotalEdges());

  ASSIGN_OR_RETURN(Adjacency adj, BuildAdjacency(g, offset, o.progress));
  VertexWeights w = BuildWeights(g, offset);
  idx_t nvtxs = static_cast<idx_t>(n), ncon = w.ncon, nparts = o.num_parts, objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(o.seed & 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
  std::vector<idx_t> part(static_cast<size_t>(n), 0);
  if (adj.adjncy.empty()) adj.adjncy.reserve(1);  // METIS wants a valid pointer
  if (std::ostream* log = o.progress.log; log != nullptr) {
    *log << "[graphshard-partition] metis: " << n << " nodes, " << adj.adjncy.size() / 2
           << " undirected edges, " << ncon << " balance constraints, " << nparts
           << " parts (no progress from inside METIS)\n";
  }
  int rc;
  const auto start = std::chrono::steady_clock::now();
  {
    Heartbeat heartbeat(o.progress.log, "metis: METIS_PartGraphKway");
    rc = METIS_PartGraphKway(&nvtxs, &ncon, adj.xadj.data(), adj.adjncy.data(), w.vwgt.data(),
                             nullptr, nullptr, &nparts, nullptr, nullptr, options, &objval,
                             part.data());
  }
  if (rc != METIS_OK) return MetisError(rc);
  if (std::ostream* log = o.progress.log; log != nullptr) {
    *log << "[graphshard-partition] metis: METIS_PartGraphKway: done (edge cut " << objval
           << " undirected edges) in "
           << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
           << " s\n";
  }
  std::vector<int> out(part.begin(), part.end());
  return out;
}

}  // namespace graphshard::partitioner::internal
