#include "partitioner/partition.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <cmath>
#include <numeric>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/npy.h"
#include "common/status_macros.h"
#include "partitioner/internal/atomic_dir.h"
#include "partitioner/internal/edge_scan.h"
#include "partitioner/internal/parallel_chunks.h"
#include "partitioner/internal/progress.h"

namespace graphshard::partitioner {
namespace {

using internal::Progress;

constexpr size_t kFeatureBufferBytes = size_t{8} << 20;

// The relabelling of one node type: part p owns new ids [offsets[p], offsets[p+1]);
// orig_of[new] = input id; within a part, input order is kept.
struct Relabel {
  std::vector<int64_t> offsets;
  std::vector<int64_t> new_of;
  std::vector<int64_t> orig_of;
};

Relabel MakeRelabel(const std::vector<int>& parts, int num_parts) {
  Relabel r;
  const size_t n = parts.size();
  r.offsets.assign(static_cast<size_t>(num_parts) + 1, 0);
  for (int p : parts) ++r.offsets[p + 1];
  std::partial_sum(r.offsets.begin(), r.offsets.end(), r.offsets.begin());
  std::vector<int64_t> next(r.offsets.begin(), r.offsets.end() - 1);
  r.new_of.resize(n);
  r.orig_of.resize(n);
  for (size_t v = 0; v < n; ++v) {  // ascending v: original order kept within a part
    int64_t id = next[parts[v]]++;
    r.new_of[v] = id;
    r.orig_of[id] = static_cast<int64_t>(v);
  }
  return r;
}

// Everything the per-part writers share.
struct Plan {
  const Graph& g;
  std::vector<std::vector<int>> parts;  // [type][node]
  std::vector<Relabel> relabel;         // [type]
  int num_parts = 0;
  internal::ProgressSink progress;
  bool allow_nonfinite = false;
  int threads = 1;
};

// Writes the files of one partition folder, recording each in the manifest.
class FolderWriter {
 public:
  FolderWriter(const std::string& root, common::Manifest& manifest)
      : root_(root), manifest_(manifest) {}

  template <typename T>
  absl::Status Write(const std::string& rel, std::vector<int64_t> shape,
                     absl::Span<const T> values) {
    ASSIGN_OR_RETURN(uint32_t crc, common::WriteNpy<T>(Path(rel), shape, values));
    Record(rel, common::DTypeOf<T>(), std::move(shape), crc);
    return absl::OkStatus();
  }
  void Record(const std::string& rel, common::DType dtype, std::vector<int64_t> shape,
              uint32_t crc) {
    manifest_.files[rel] = common::FileInfo{dtype, std::move(shape), common::FormatCrc32(crc)};
  }
  std::string Path(const std::string& rel) const { return absl::StrCat(root_, "/", rel); }

 private:
  std::string root_;
  common::Manifest& manifest_;
};

// The feature rows [i, end) of part p's nodes (new ids b + i ...), copied from the input into
// `buf`; InvalidArgument naming the first non-finite value unless allow_nonfinite.
absl::Status GatherFeatureRows(const NodeTypeData& t, const Relabel& r, int64_t b, int64_t i,
                               int64_t end, const std::string& rel, bool allow_nonfinite,
                               std::vector<float>& buf) {
  const int64_t f = t.feat_dim;
  buf.resize(static_cast<size_t>((end - i) * f));
  float* out = buf.data();
  for (int64_t id = b + i; id < b + end; ++id, out += f) {
    auto row =
        t.features.span().subspan(static_cast<size_t>(r.orig_of[id] * f), static_cast<size_t>(f));
    if (!allow_nonfinite) {
      for (int64_t c = 0; c < f; ++c) {
        if (std::isfinite(row[c])) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            "node type '", t.name, "': input row ", r.orig_of[id], ", feature ", c, " is ",
            row[c], " (writing ", rel,
            "); NaN or Inf features train to `loss nan`: fix the input, or pass "
            "--allow-nonfinite to keep them"));
      }
    }
    std::copy(row.begin(), row.end(), out);
  }
  return absl::OkStatus();
}

// Streams the feature rows of part p's nodes, in new-id order, from the (possibly mmap'ed)
// input into feat.npy, dropping input pages behind. `threads` workers gather a group of chunks
// at once (the input's rows are scattered: one thread gathered ~330 MB/s on the 2-core VM);
// the chunks are appended in order, so the file does not depend on the thread count, and a
// bad value is reported from the first chunk that has one.
absl::Status WriteFeatures(const NodeTypeData& t, const Relabel& r, int part, FolderWriter& w,
                           Progress& progress, bool allow_nonfinite, int threads) {
  const int64_t b = r.offsets[part], n = r.offsets[part + 1] - b, f = t.feat_dim;
  const std::string rel = common::NodeFilePath(part, t.name, "feat.npy");
  ASSIGN_OR_RETURN(auto feat,
                   common::NpyWriter::Create(w.Path(rel), common::DType::kFloat32, {n, f}));
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, kFeatureBufferBytes / 4 / std::max<int64_t>(f, 1));
  const int64_t group = std::clamp(threads, 1, 16);  // at most 128 MiB of buffers
  std::vector<std::vector<float>> bufs(static_cast<size_t>(group));
  std::vector<absl::Status> status(static_cast<size_t>(group));
  int64_t released = 0;  // input rows before this one may be dropped from memory
  for (int64_t g0 = 0; g0 < n && f > 0; g0 += group * rows_per_chunk) {
    const int64_t g_rows = std::min(n - g0, group * rows_per_chunk);
    (void)internal::ParallelChunks(g_rows, rows_per_chunk, static_cast<int>(group),
                                   [&](int64_t c, int64_t first, int64_t last) {
      status[c] = GatherFeatureRows(t, r, b, g0 + first, g0 + last, rel, allow_nonfinite,
                                    bufs[c]);
      return absl::OkStatus();  // every chunk runs: the first bad one is reported below
    });
    for (int64_t c = 0; c < internal::NumChunks(g_rows, rows_per_chunk); ++c) {
      RETURN_IF_ERROR(status[c]);
      RETURN_IF_ERROR(feat->AppendValues<float>(bufs[c]));
    }
    const int64_t upto = r.orig_of[b + g0 + g_rows - 1];  // ascending within a part
    t.features.ReleasePages(released * f, upto * f);
    released = upto;
    progress.Add(g_rows);
  }
  t.features.ReleasePages(0, t.features.size());
  ASSIGN_OR_RETURN(uint32_t crc, feat->Finish());
  w.Record(rel, common::DType::kFloat32, {n, f}, crc);
  return absl::OkStatus();
}

absl::Status WriteNodes(const NodeTypeData& t, const Relabel& r, int part, FolderWriter& w,
                        Progress& progress, bool allow_nonfinite, int threads) {
  const int64_t b = r.offsets[part], e = r.offsets[part + 1], n = e - b;
  RETURN_IF_ERROR(WriteFeatures(t, r, part, w, progress, allow_nonfinite, threads));
  std::vector<int64_t> labels(static_cast<size_t>(n), -1);
  if (!t.labels.empty()) {
    for (int64_t id = b; id < e; ++id)
      labels[id - b] = std::max<int64_t>(-1, t.labels[r.orig_of[id]]);
  }
  RETURN_IF_ERROR(w.Write<int64_t>(common::NodeFilePath(part, t.name, "label.npy"), {n}, labels));
  if (!t.time.empty()) {
    std::vector<int64_t> time(static_cast<size_t>(n));
    for (int64_t id = b; id < e; ++id) time[id - b] = t.time[r.orig_of[id]];
    RETURN_IF_ERROR(w.Write<int64_t>(common::NodeFilePath(part, t.name, "time.npy"), {n}, time));
  }
  return w.Write<int64_t>(common::NodeFilePath(part, t.name, "orig_id.npy"), {n},
                          absl::Span<const int64_t>(r.orig_of).subspan(b, n));
}

// The time of each edge of `t`, or an empty span: its own, else its source's node time (PyG's
// node-level time_attr: a neighbour is eligible when its own time is at or before the seed's).
absl::Span<const int64_t> EdgeTimes(const Graph& g, const EdgeTypeData& t,
                                    std::vector<int64_t>& derived) {
  if (!t.time.empty()) return t.time.span();
  const NodeTypeData& src = g.node_types[g.NodeTypeIndex(t.src)];
  if (src.time.empty()) return {};
  derived.resize(static_cast<size_t>(t.num_edges()));
  for (int64_t e = 0; e < t.num_edges(); ++e) derived[e] = src.time[t.src_ids[e]];
  return derived;
}

// Sorts the in-edges of destinations [first, last) by (source, edge id), or with edge times by
// (time, source, edge id), filling edge_times.
void SortNeighbourLists(const std::vector<int64_t>& indptr, int64_t first, int64_t last,
                        absl::Span<const int64_t> times, std::vector<int64_t>& indices,
                        std::vector<int64_t>& edge_ids, std::vector<int64_t>& edge_times) {
  if (!times.empty()) {
    std::vector<std::tuple<int64_t, int64_t, int64_t>> seg;
    for (int64_t v = first; v < last; ++v) {
      const int64_t lo = indptr[v], hi = indptr[v + 1];
      seg.clear();
      for (int64_t i = lo; i < hi; ++i) seg.emplace_back(times[edge_ids[i]], indices[i], edge_ids[i]);
      std::sort(seg.begin(), seg.end());
      for (int64_t i = lo; i < hi; ++i) {
        std::tie(edge_times[i], indices[i], edge_ids[i]) = seg[i - lo];
      }
    }
    return;
  }
  std::vector<std::pair<int64_t, int64_t>> seg;
  for (int64_t v = first; v < last; ++v) {
    const int64_t lo = indptr[v], hi = indptr[v + 1];
    if (hi - lo < 2) continue;
    seg.clear();
    for (int64_t i = lo; i < hi; ++i) seg.emplace_back(indices[i], edge_ids[i]);
    if (std::is_sorted(seg.begin(), seg.end())) continue;
    std::sort(seg.begin(), seg.end());
    for (int64_t i = lo; i < hi; ++i) std::tie(indices[i], edge_ids[i]) = seg[i - lo];
  }
}

// The in-edges of one edge type whose destination part p owns, as CSC over new ids: two passes
// over the edge list (count, fill; on plan.threads workers), then each destination's in-edges sorted by (source, edge id),
// or with edge times by (time, source, edge id), so that the edges at or before a time are a
// prefix of each neighbour list (the server finds it by binary search).
absl::Status WriteEdges(const Plan& plan, const EdgeTypeData& t, int part, FolderWriter& w,
                        Progress& progress, int64_t& num_stored, int64_t& max_in_degree) {
  const int s = plan.g.NodeTypeIndex(t.src), d = plan.g.NodeTypeIndex(t.dst);
  const Relabel &rs = plan.relabel[s], &rd = plan.relabel[d];
  const std::vector<int>& owner = plan.parts[d];
  const int64_t b = rd.offsets[part], n = rd.offsets[part + 1] - b;
  std::vector<int64_t> derived_times;
  const absl::Span<const int64_t> times = EdgeTimes(plan.g, t, derived_times);
  std::vector<int64_t> indptr(static_cast<size_t>(n) + 1, 0);
  // Both passes read the destination's owner and new id, then add to a counter, at random
  // places, and a locked add waits for its cache line: the owner and new id are fetched
  // kIdsAhead edges ahead, the counter (and where the edge goes) kSlotsAhead ahead.
  constexpr int64_t kIdsAhead = 32, kSlotsAhead = 16;
  auto prefetch_ids = [&](int64_t e, int64_t end, bool with_source) {
    if (e + kIdsAhead >= end) return;
    const int64_t v = t.dst_ids[e + kIdsAhead];
    __builtin_prefetch(&owner[static_cast<size_t>(v)]);
    __builtin_prefetch(&rd.new_of[static_cast<size_t>(v)]);
    if (with_source) __builtin_prefetch(&rs.new_of[static_cast<size_t>(t.src_ids[e + kIdsAhead])]);
  };
  internal::ParallelScanEdgeChunks(t, &progress, plan.threads, [&](int64_t first, int64_t end) {
    for (int64_t e = first; e < end; ++e) {
      prefetch_ids(e, end, false);
      if (e + kSlotsAhead < end) {
        const int64_t va = t.dst_ids[e + kSlotsAhead];
        if (owner[va] == part) __builtin_prefetch(&indptr[rd.new_of[va] - b + 1], 1);
      }
      const int64_t v = t.dst_ids[e];
      if (owner[v] != part) continue;
      std::atomic_ref<int64_t>(indptr[rd.new_of[v] - b + 1])
          .fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
  const int64_t m = indptr[n];
  std::vector<int64_t> indices(static_cast<size_t>(m)), edge_ids(static_cast<size_t>(m));
  {
    // Filled in any order by the workers; the sort below makes each list's order a function of
    // the edges alone.
    std::vector<int64_t> fill(indptr.begin(), indptr.end() - 1);
    internal::ParallelScanEdgeChunks(t, &progress, plan.threads, [&](int64_t first, int64_t end) {
      for (int64_t e = first; e < end; ++e) {
        prefetch_ids(e, end, true);
        if (e + kSlotsAhead < end) {
          const int64_t va = t.dst_ids[e + kSlotsAhead];
          if (owner[va] == part) {
            std::atomic_ref<int64_t> slot(fill[rd.new_of[va] - b]);
            // A hint: another worker may move the slot on before this edge comes.
            const int64_t at = slot.load(std::memory_order_relaxed);
            __builtin_prefetch(&slot, 1);
            if (at < m) {
              __builtin_prefetch(indices.data() + at, 1);
              __builtin_prefetch(edge_ids.data() + at, 1);
            }
          }
        }
        const int64_t v = t.dst_ids[e];
        if (owner[v] != part) continue;
        const int64_t pos = std::atomic_ref<int64_t>(fill[rd.new_of[v] - b])
                                .fetch_add(1, std::memory_order_relaxed);
        indices[pos] = rs.new_of[t.src_ids[e]];
        edge_ids[pos] = e;
      }
    });
  }
  std::vector<int64_t> edge_times;
  if (!times.empty()) edge_times.resize(static_cast<size_t>(m));
  RETURN_IF_ERROR(internal::ParallelChunks(n, int64_t{1} << 14, plan.threads,
                                           [&](int64_t, int64_t first, int64_t last) {
    SortNeighbourLists(indptr, first, last, times, indices, edge_ids, edge_times);
    return absl::OkStatus();
  }));
  const std::string et = t.Name();
  RETURN_IF_ERROR(w.Write<int64_t>(common::EdgeFilePath(part, et, "indptr.npy"), {n + 1}, indptr));
  RETURN_IF_ERROR(w.Write<int64_t>(common::EdgeFilePath(part, et, "indices.npy"), {m}, indices));
  RETURN_IF_ERROR(w.Write<int64_t>(common::EdgeFilePath(part, et, "edge_id.npy"), {m}, edge_ids));
  if (!times.empty()) {
    RETURN_IF_ERROR(
        w.Write<int64_t>(common::EdgeFilePath(part, et, "time.npy"), {m}, edge_times));
  }
  num_stored = m;
  for (int64_t v = 0; v < n; ++v) {
    max_in_degree = std::max(max_in_degree, indptr[v + 1] - indptr[v]);
  }
  return absl::OkStatus();
}

absl::Status WriteSplits(const Plan& plan, common::Manifest& m, FolderWriter& w) {
  int64_t total = 0;
  for (const NodeTypeData& t : plan.g.node_types) {
    for (const auto& [name, ids] : t.splits) total += std::ssize(ids.span());
  }
  Progress progress(plan.progress, "splits", total);
  for (size_t ti = 0; ti < plan.g.node_types.size(); ++ti) {
    const NodeTypeData& t = plan.g.node_types[ti];
    for (const auto& [name, ids] : t.splits) {
      std::vector<std::vector<int64_t>> per_part(static_cast<size_t>(plan.num_parts));
      for (int64_t v : ids.span()) {
        per_part[plan.parts[ti][v]].push_back(plan.relabel[ti].new_of[v]);
        progress.Add(1);
      }
      std::vector<int64_t>& sizes = m.splits[name][t.name];
      for (int p = 0; p < plan.num_parts; ++p) {
        std::sort(per_part[p].begin(), per_part[p].end());
        sizes.push_back(std::ssize(per_part[p]));
        RETURN_IF_ERROR(w.Write<int64_t>(common::SplitFilePath(p, t.name, name),
                                         {std::ssize(per_part[p])}, per_part[p]));
      }
    }
  }
  progress.Finish();
  return absl::OkStatus();
}

// Link prediction: each split's supervision edges with the part owning their destination (new
// ids, [2, n]: sources then destinations, in the split's order), and in every part the training
// in-degree of every destination (degree-biased negatives need the whole distribution).
absl::Status WriteEdgeSplits(const Plan& plan, internal::AtomicDir& dir, common::Manifest& m,
                             FolderWriter& w) {
  for (const EdgeTypeData& t : plan.g.edge_types) {
    if (t.splits.empty()) continue;
    const int s = plan.g.NodeTypeIndex(t.src), d = plan.g.NodeTypeIndex(t.dst);
    const Relabel &rs = plan.relabel[s], &rd = plan.relabel[d];
    const std::string et = t.Name();
    for (int p = 0; p < plan.num_parts; ++p) {
      RETURN_IF_ERROR(dir.MakeDirs(absl::StrCat(common::PartDir(p), "/edge_splits/", et)));
    }
    if (!t.split_reverse.empty()) m.edge_split_reverse[et] = t.split_reverse;
    std::vector<int64_t> degree(static_cast<size_t>(plan.g.node_types[d].num_nodes), 0);
    for (const auto& [name, split] : t.splits) {
      std::vector<std::vector<int64_t>> src(plan.num_parts), dst(plan.num_parts),
          time(plan.num_parts);
      const bool timed = !split.time.empty();
      for (int64_t i = 0; i < split.src_ids.size(); ++i) {
        const int p = plan.parts[d][split.dst_ids[i]];
        src[p].push_back(rs.new_of[split.src_ids[i]]);
        dst[p].push_back(rd.new_of[split.dst_ids[i]]);
        if (timed) time[p].push_back(split.time[i]);
        if (name == "train") ++degree[rd.new_of[split.dst_ids[i]]];
      }
      std::vector<int64_t>& sizes = m.edge_splits[et][name];
      for (int p = 0; p < plan.num_parts; ++p) {
        const int64_t n = std::ssize(src[p]);
        sizes.push_back(n);
        src[p].insert(src[p].end(), dst[p].begin(), dst[p].end());
        RETURN_IF_ERROR(
            w.Write<int64_t>(common::EdgeSplitFilePath(p, et, name), {2, n}, src[p]));
        if (timed) {  // <split>_time.npy: each supervision edge's time, the same order
          RETURN_IF_ERROR(w.Write<int64_t>(
              common::EdgeSplitFilePath(p, et, absl::StrCat(name, "_time")), {n}, time[p]));
        }
      }
    }
    for (int p = 0; p < plan.num_parts; ++p) {
      RETURN_IF_ERROR(w.Write<int64_t>(common::EdgeSplitFilePath(p, et, "dst_degree"),
                                       {std::ssize(degree)}, degree));
    }
  }
  return absl::OkStatus();
}

absl::Status WritePart(const Plan& plan, int p, internal::AtomicDir& dir, common::Manifest& m,
                       FolderWriter& w) {
  const Graph& g = plan.g;
  for (size_t ti = 0; ti < g.node_types.size(); ++ti) {
    const NodeTypeData& t = g.node_types[ti];
    RETURN_IF_ERROR(dir.MakeDirs(absl::StrCat(common::PartDir(p), "/nodes/", t.name)));
    RETURN_IF_ERROR(dir.MakeDirs(absl::StrCat(common::PartDir(p), "/splits/", t.name)));
    Progress progress(plan.progress,
                      absl::StrCat("part ", p + 1, "/", plan.num_parts, " nodes ", t.name),
                      plan.relabel[ti].offsets[p + 1] - plan.relabel[ti].offsets[p]);
    RETURN_IF_ERROR(
        WriteNodes(t, plan.relabel[ti], p, w, progress, plan.allow_nonfinite, plan.threads));
    progress.Finish();
  }
  Progress progress(plan.progress, absl::StrCat("part ", p + 1, "/", plan.num_parts, " edges"),
                    2 * g.TotalEdges());
  for (size_t ei = 0; ei < g.edge_types.size(); ++ei) {
    const EdgeTypeData& t = g.edge_types[ei];
    RETURN_IF_ERROR(dir.MakeDirs(absl::StrCat(common::PartDir(p), "/edges/", t.Name())));
    common::EdgeTypeInfo& info = m.edge_types[ei];
    info.max_in_degree = std::max<int64_t>(info.max_in_degree, 0);
    RETURN_IF_ERROR(
        WriteEdges(plan, t, p, w, progress, info.part_num_edges[p], info.max_in_degree));
  }
  progress.Finish();
  return absl::OkStatus();
}

common::Manifest MakeManifest(const Plan& plan, const PartitionOptions& o) {
  common::Manifest m;
  m.num_parts = o.num_parts;
  m.method = o.method;
  m.seed = o.seed;
  for (size_t ti = 0; ti < plan.g.node_types.size(); ++ti) {
    const NodeTypeData& t = plan.g.node_types[ti];
    m.node_types.push_back(common::NodeTypeInfo{t.name, t.num_nodes, plan.relabel[ti].offsets,
                                                t.feat_dim, t.labels.empty() ? 0 : t.num_classes});
  }
  for (const EdgeTypeData& t : plan.g.edge_types) {
    m.edge_types.push_back(common::EdgeTypeInfo{t.src, t.rel, t.dst, t.num_edges(),
                                                std::vector<int64_t>(o.num_parts, 0)});
  }
  return m;
}

}  // namespace

absl::StatusOr<common::Manifest> PartitionGraph(const Graph& g, const PartitionOptions& options,
                                                const std::string& out) {
  RETURN_IF_ERROR(ValidateGraph(g));
  ASSIGN_OR_RETURN(internal::AtomicDir dir, internal::AtomicDir::Create(out, options.force));
  Plan plan{g, {}, {}, options.num_parts,
            {options.log, options.log_is_terminal, options.progress_every_s},
            options.allow_nonfinite,
            options.threads > 0 ? options.threads
                                : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))};
  ASSIGN_OR_RETURN(plan.parts, AssignGraphParts(g, options));
  for (const std::vector<int>& parts : plan.parts) {
    plan.relabel.push_back(MakeRelabel(parts, options.num_parts));
  }
  common::Manifest m = MakeManifest(plan, options);
  FolderWriter writer(dir.tmp_path(), m);
  for (int p = 0; p < options.num_parts; ++p) RETURN_IF_ERROR(WritePart(plan, p, dir, m, writer));
  RETURN_IF_ERROR(WriteSplits(plan, m, writer));
  RETURN_IF_ERROR(WriteEdgeSplits(plan, dir, m, writer));
  RETURN_IF_ERROR(common::WriteManifest(dir.tmp_path(), m));
  RETURN_IF_ERROR(dir.Commit());
  return m;
}

}  // namespace graphshard::partitioner
