#include "partitioner/partition.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/npy.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "partitioner/internal/atomic_dir.h"

namespace graphshard::partitioner {
namespace {

constexpr char kNodeType[] = "node";
constexpr char kRel[] = "to";
constexpr int kMaxParts = 1 << 16;

// The relabelling: part p owns new ids [offsets[p], offsets[p+1]); orig_of[new] = input id.
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

// Global CSC over new ids: in-edges of new id d are [indptr[d], indptr[d+1]).
struct GlobalCsc {
  std::vector<int64_t> indptr;
  std::vector<int64_t> indices;  // new source ids
  std::vector<int64_t> edge_ids;
};

GlobalCsc MakeCsc(const InputGraph& g, const Relabel& r) {
  GlobalCsc c;
  const int64_t n = g.num_nodes;
  c.indptr.assign(static_cast<size_t>(n) + 1, 0);
  for (int64_t d : g.dst) ++c.indptr[r.new_of[d] + 1];
  std::partial_sum(c.indptr.begin(), c.indptr.end(), c.indptr.begin());
  std::vector<int64_t> fill(c.indptr.begin(), c.indptr.end() - 1);
  c.indices.resize(g.src.size());
  c.edge_ids.resize(g.src.size());
  for (size_t e = 0; e < g.src.size(); ++e) {  // ascending e: ties end up by edge id
    int64_t pos = fill[r.new_of[g.dst[e]]]++;
    c.indices[pos] = r.new_of[g.src[e]];
    c.edge_ids[pos] = static_cast<int64_t>(e);
  }
  std::vector<std::pair<int64_t, int64_t>> seg;
  for (int64_t d = 0; d < n; ++d) {
    const int64_t b = c.indptr[d], end = c.indptr[d + 1];
    if (end - b < 2) continue;
    seg.clear();
    for (int64_t i = b; i < end; ++i) seg.emplace_back(c.indices[i], c.edge_ids[i]);
    std::sort(seg.begin(), seg.end());
    for (int64_t i = b; i < end; ++i) std::tie(c.indices[i], c.edge_ids[i]) = seg[i - b];
  }
  return c;
}

// Writes the files of one partition folder, recording each in the manifest.
class FolderWriter {
 public:
  FolderWriter(const std::string& root, common::Manifest& manifest)
      : root_(root), manifest_(manifest) {}

  template <typename T>
  absl::Status Write(const std::string& rel, std::vector<int64_t> shape,
                     absl::Span<const T> values) {
    ASSIGN_OR_RETURN(uint32_t crc, common::WriteNpy<T>(absl::StrCat(root_, "/", rel), shape,
                                                       values));
    Record(rel, common::DTypeOf<T>(), std::move(shape), crc);
    return absl::OkStatus();
  }
  void Record(const std::string& rel, common::DType dtype, std::vector<int64_t> shape,
              uint32_t crc) {
    manifest_.files[rel] = common::FileInfo{dtype, std::move(shape), common::FormatCrc32(crc)};
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  common::Manifest& manifest_;
};

absl::Status WriteNodes(const InputGraph& g, const Relabel& r, int part, FolderWriter& w) {
  const int64_t b = r.offsets[part], e = r.offsets[part + 1], n = e - b;
  const std::string feat_rel = common::NodeFilePath(part, kNodeType, "feat.npy");
  ASSIGN_OR_RETURN(auto feat, common::NpyWriter::Create(absl::StrCat(w.root(), "/", feat_rel),
                                                        common::DType::kFloat32,
                                                        {n, g.feat_dim}));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t id = b; id < e; ++id) {
    const int64_t v = r.orig_of[id];
    RETURN_IF_ERROR(feat->AppendValues(absl::Span<const float>(
        g.features.data() + v * g.feat_dim, static_cast<size_t>(g.feat_dim))));
    labels[id - b] = g.labels[v];
  }
  ASSIGN_OR_RETURN(uint32_t crc, feat->Finish());
  w.Record(feat_rel, common::DType::kFloat32, {n, g.feat_dim}, crc);
  RETURN_IF_ERROR(w.Write<int64_t>(common::NodeFilePath(part, kNodeType, "label.npy"), {n},
                                   labels));
  return w.Write<int64_t>(common::NodeFilePath(part, kNodeType, "orig_id.npy"), {n},
                          absl::Span<const int64_t>(r.orig_of).subspan(b, n));
}

absl::Status WriteEdges(const GlobalCsc& c, const Relabel& r, int part, const std::string& etype,
                        FolderWriter& w) {
  const int64_t b = r.offsets[part], e = r.offsets[part + 1];
  const int64_t eb = c.indptr[b], ee = c.indptr[e];
  std::vector<int64_t> indptr(static_cast<size_t>(e - b) + 1);
  for (int64_t d = b; d <= e; ++d) indptr[d - b] = c.indptr[d] - eb;
  RETURN_IF_ERROR(w.Write<int64_t>(common::EdgeFilePath(part, etype, "indptr.npy"),
                                   {e - b + 1}, indptr));
  RETURN_IF_ERROR(w.Write<int64_t>(common::EdgeFilePath(part, etype, "indices.npy"), {ee - eb},
                                   absl::Span<const int64_t>(c.indices).subspan(eb, ee - eb)));
  return w.Write<int64_t>(common::EdgeFilePath(part, etype, "edge_id.npy"), {ee - eb},
                          absl::Span<const int64_t>(c.edge_ids).subspan(eb, ee - eb));
}

absl::Status WriteSplits(const InputGraph& g, const Relabel& r, const std::vector<int>& parts,
                         common::Manifest& m, FolderWriter& w) {
  const int k = m.num_parts;
  for (const auto& [name, ids] : g.splits) {
    std::vector<std::vector<int64_t>> per_part(static_cast<size_t>(k));
    for (int64_t v : ids) per_part[parts[v]].push_back(r.new_of[v]);
    std::vector<int64_t>& sizes = m.splits[name][kNodeType];
    for (int p = 0; p < k; ++p) {
      std::sort(per_part[p].begin(), per_part[p].end());
      sizes.push_back(std::ssize(per_part[p]));
      RETURN_IF_ERROR(w.Write<int64_t>(common::SplitFilePath(p, kNodeType, name),
                                       {std::ssize(per_part[p])}, per_part[p]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> AssignParts(const InputGraph& g, const PartitionOptions& o) {
  if (o.method != "random") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown partition method \"", o.method, "\" (this build has: random)"));
  }
  if (o.num_parts < 1 || o.num_parts > kMaxParts) {
    return absl::InvalidArgumentError(
        absl::StrCat("number of parts ", o.num_parts, " is outside [1, ", kMaxParts, "]"));
  }
  if (g.num_nodes > 0 && o.num_parts > g.num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat("number of parts ", o.num_parts,
                                                   " exceeds the number of nodes ", g.num_nodes));
  }
  // A seeded Fisher-Yates shuffle cut into near-equal pieces: balanced parts.
  std::vector<int64_t> perm(static_cast<size_t>(g.num_nodes));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  common::SplitMix64 rng(common::MixSeed(o.seed, 0x70617274 /* "part" */));
  for (int64_t i = g.num_nodes - 1; i > 0; --i) {
    std::swap(perm[i], perm[rng.Below(static_cast<uint64_t>(i) + 1)]);
  }
  // The first `rem` parts get base + 1 nodes, the others base.
  const int64_t base = g.num_nodes / o.num_parts, rem = g.num_nodes % o.num_parts;
  const int64_t big = rem * (base + 1);
  std::vector<int> parts(static_cast<size_t>(g.num_nodes));
  for (int64_t i = 0; i < g.num_nodes; ++i) {
    parts[perm[i]] = static_cast<int>(i < big ? i / (base + 1) : rem + (i - big) / base);
  }
  return parts;
}

absl::StatusOr<common::Manifest> PartitionGraph(const InputGraph& g,
                                                const PartitionOptions& options,
                                                const std::string& out) {
  RETURN_IF_ERROR(ValidateInputGraph(g));
  ASSIGN_OR_RETURN(std::vector<int> parts, AssignParts(g, options));
  ASSIGN_OR_RETURN(internal::AtomicDir dir, internal::AtomicDir::Create(out, options.force));
  const int k = options.num_parts;
  Relabel relabel = MakeRelabel(parts, k);
  GlobalCsc csc = MakeCsc(g, relabel);

  common::Manifest m;
  m.num_parts = k;
  m.method = options.method;
  m.seed = options.seed;
  m.node_types.push_back(common::NodeTypeInfo{kNodeType, g.num_nodes, relabel.offsets,
                                              g.feat_dim, g.num_classes});
  common::EdgeTypeInfo et{kNodeType, kRel, kNodeType, g.num_edges(), {}};
  for (int p = 0; p < k; ++p) {
    et.part_num_edges.push_back(csc.indptr[relabel.offsets[p + 1]] -
                                csc.indptr[relabel.offsets[p]]);
  }
  m.edge_types.push_back(et);
  const std::string etype = et.Name();

  FolderWriter writer(dir.tmp_path(), m);
  for (int p = 0; p < k; ++p) {
    RETURN_IF_ERROR(dir.MakeDirs(absl::StrCat(common::PartDir(p), "/nodes/", kNodeType)));
    RETURN_IF_ERROR(dir.MakeDirs(absl::StrCat(common::PartDir(p), "/edges/", etype)));
    RETURN_IF_ERROR(dir.MakeDirs(absl::StrCat(common::PartDir(p), "/splits/", kNodeType)));
    RETURN_IF_ERROR(WriteNodes(g, relabel, p, writer));
    RETURN_IF_ERROR(WriteEdges(csc, relabel, p, etype, writer));
  }
  RETURN_IF_ERROR(WriteSplits(g, relabel, parts, m, writer));
  RETURN_IF_ERROR(common::WriteManifest(dir.tmp_path(), m));
  RETURN_IF_ERROR(dir.Commit());
  return m;
}

}  // namespace graphshard::partitioner
