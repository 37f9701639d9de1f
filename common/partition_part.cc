#include "common/partition_part.h"

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/checksum.h"
#include "common/status_macros.h"

namespace graphshard::common {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status CheckIdsInRange(absl::Span<const int64_t> ids, int64_t lo, int64_t hi,
                             const std::string& path) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < lo || ids[i] >= hi) {
      return absl::DataLossError(absl::StrCat(path, ": value ", ids[i], " at index ", i,
                                              " is outside [", lo, ", ", hi, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PartitionPart>> PartitionPart::Load(const std::string& dir,
                                                                   int part,
                                                                   const LoadOptions& options) {
  auto p = std::unique_ptr<PartitionPart>(new PartitionPart());
  p->dir_ = dir;
  p->part_ = part;
  p->options_ = options;
  ASSIGN_OR_RETURN(p->manifest_, ReadManifest(dir));
  if (part < 0 || part >= p->manifest_.num_parts) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": part ", part, " does not exist (",
                                                   p->manifest_.num_parts, " parts)"));
  }
  for (const NodeTypeInfo& t : p->manifest_.node_types) {
    p->books_[t.name] = PartitionBook(t.part_offsets);
  }
  // Progress in bytes of the part's files, as the manifest lists them.
  int64_t total = 0;
  const std::string prefix = absl::StrCat(PartDir(part), "/");
  for (const auto& [rel, info] : p->manifest_.files) {
    if (!absl::StartsWith(rel, prefix)) continue;
    int64_t n = static_cast<int64_t>(DTypeSize(info.dtype));
    for (int64_t d : info.shape) n *= d;
    total += n;
  }
  ProgressLine progress(options.progress, absl::StrCat("load part ", part), total,
                        ProgressUnit::kBytes);
  p->progress_ = &progress;
  for (const NodeTypeInfo& t : p->manifest_.node_types) RETURN_IF_ERROR(p->LoadNodes(t));
  for (const EdgeTypeInfo& t : p->manifest_.edge_types) RETURN_IF_ERROR(p->LoadEdges(t));
  p->progress_ = nullptr;
  progress.Finish();
  return p;
}

absl::StatusOr<NpyFile> PartitionPart::OpenChecked(const std::string& rel, DType dtype,
                                                   const std::vector<int64_t>& shape) {
  std::string path = absl::StrCat(dir_, "/", rel);
  auto listed = manifest_.files.find(rel);
  if (listed == manifest_.files.end()) {
    return absl::InvalidArgumentError(absl::StrCat(dir_, "/", kManifestFileName, ": no entry for ",
                                                   rel));
  }
  const FileInfo& info = listed->second;
  if (info.dtype != dtype || info.shape != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir_, "/", kManifestFileName, ": files[", rel, "] says ",
                     DTypeName(info.dtype), ShapeString(info.shape), ", the graph needs ",
                     DTypeName(dtype), ShapeString(shape)));
  }
  ASSIGN_OR_RETURN(NpyFile file, NpyFile::Open(path));
  if (file.header().dtype != dtype) {
    return absl::DataLossError(absl::StrCat(path, ": dtype is ", DTypeName(file.header().dtype),
                                            ", manifest says ", DTypeName(dtype)));
  }
  if (file.header().shape != shape) {
    return absl::DataLossError(absl::StrCat(path, ": shape is ", ShapeString(file.header().shape),
                                            ", manifest says ", ShapeString(shape)));
  }
  if (options_.verify_checksums) {
    // In chunks, so that progress moves through a large feature file.
    constexpr size_t kChunk = size_t{64} << 20;
    const absl::Span<const char> bytes = file.file_bytes();
    uint32_t sum = 0;
    for (size_t at = 0; at < bytes.size(); at += kChunk) {
      sum = Crc32(bytes.subspan(at, kChunk), sum);
      if (progress_ != nullptr) {
        progress_->Add(static_cast<int64_t>(std::min(kChunk, bytes.size() - at)));
      }
    }
    std::string crc = FormatCrc32(sum);
    if (crc != info.checksum) {
      return absl::DataLossError(absl::StrCat(path, ": checksum mismatch: file has ", crc,
                                              ", manifest says ", info.checksum));
    }
  }
  files_.push_back(file);
  return file;
}

absl::Status PartitionPart::CheckStatedDtype(const NodeTypeInfo& info, absl::string_view array,
                                             const std::string& stated, DType needed) const {
  if (stated == DTypeName(needed)) return absl::OkStatus();
  const std::string rel = NodeFilePath(part_, info.name, absl::StrCat(array, ".npy"));
  const std::string field = absl::StrCat(dir_, "/", kManifestFileName, ": node type '", info.name,
                                         "' ", array, "_dtype is '", stated, "'");
  absl::StatusOr<NpyFile> file = NpyFile::Open(absl::StrCat(dir_, "/", rel));
  if (file.ok() && DTypeName(file->header().dtype) != stated) {
    return absl::InvalidArgumentError(absl::StrCat(field, ", but ", rel, " holds ",
                                                   DTypeName(file->header().dtype)));
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " (", rel, "); graphshard reads ",
                                                 DTypeName(needed), " only"));
}

absl::StatusOr<absl::Span<const int64_t>> PartitionPart::OpenInt64(const std::string& rel,
                                                                   std::vector<int64_t> shape) {
  ASSIGN_OR_RETURN(NpyFile file, OpenChecked(rel, DType::kInt64, shape));
  return file.Values<int64_t>();
}

absl::StatusOr<absl::Span<const float>> PartitionPart::OpenFloat(const std::string& rel,
                                                                 std::vector<int64_t> shape) {
  ASSIGN_OR_RETURN(NpyFile file, OpenChecked(rel, DType::kFloat32, shape));
  return file.Values<float>();
}

absl::Status PartitionPart::LoadNodes(const NodeTypeInfo& info) {
  NodeShard s;
  s.ntype = info.name;
  s.begin = info.part_offsets[part_];
  s.end = info.part_offsets[part_ + 1];
  s.feat_dim = info.feat_dim;
  const int64_t n = s.num_rows();
  RETURN_IF_ERROR(CheckStatedDtype(info, "feat", info.feat_dtype, DType::kFloat32));
  RETURN_IF_ERROR(CheckStatedDtype(info, "label", info.label_dtype, DType::kInt64));
  ASSIGN_OR_RETURN(s.features, OpenFloat(NodeFilePath(part_, info.name, "feat.npy"),
                                         {n, info.feat_dim}));
  std::string label_rel = NodeFilePath(part_, info.name, "label.npy");
  ASSIGN_OR_RETURN(s.labels, OpenInt64(label_rel, {n}));
  RETURN_IF_ERROR(CheckIdsInRange(s.labels, -1, std::max<int64_t>(info.num_classes, 0),
                                  absl::StrCat(dir_, "/", label_rel)));
  std::string orig_rel = NodeFilePath(part_, info.name, "orig_id.npy");
  ASSIGN_OR_RETURN(s.orig_ids, OpenInt64(orig_rel, {n}));
  RETURN_IF_ERROR(CheckIdsInRange(s.orig_ids, 0, info.num_nodes, absl::StrCat(dir_, "/", orig_rel)));
  std::string time_rel = NodeFilePath(part_, info.name, "time.npy");
  if (manifest_.files.count(time_rel) > 0) {
    ASSIGN_OR_RETURN(s.time, OpenInt64(time_rel, {n}));
    s.has_time = true;
  }
  for (const auto& [split, per_type] : manifest_.splits) {
    auto it = per_type.find(info.name);
    if (it == per_type.end()) continue;
    std::string rel = SplitFilePath(part_, info.name, split);
    ASSIGN_OR_RETURN(absl::Span<const int64_t> ids, OpenInt64(rel, {it->second[part_]}));
    RETURN_IF_ERROR(CheckIdsInRange(ids, s.begin, s.end, absl::StrCat(dir_, "/", rel)));
    s.splits[split] = ids;
  }
  nodes_[info.name] = std::move(s);
  return absl::OkStatus();
}

absl::Status PartitionPart::LoadEdges(const EdgeTypeInfo& info) {
  const NodeTypeInfo* dst = manifest_.FindNodeType(info.dst);
  const NodeTypeInfo* src = manifest_.FindNodeType(info.src);
  const int64_t rows = dst->part_offsets[part_ + 1] - dst->part_offsets[part_];
  const int64_t e = info.part_num_edges[part_];
  const std::string etype = info.Name();
  std::string indptr_rel = EdgeFilePath(part_, etype, "indptr.npy");
  std::string indices_rel = EdgeFilePath(part_, etype, "indices.npy");
  ASSIGN_OR_RETURN(auto indptr, OpenInt64(indptr_rel, {rows + 1}));
  ASSIGN_OR_RETURN(auto indices, OpenInt64(indices_rel, {e}));
  EdgeShard s;
  s.info = info;
  ASSIGN_OR_RETURN(s.csc, CscView::Create(indptr, indices, src->num_nodes,
                                          absl::StrCat(dir_, "/", indptr_rel, " + indices.npy")));
  ASSIGN_OR_RETURN(s.edge_ids, OpenInt64(EdgeFilePath(part_, etype, "edge_id.npy"), {e}));
  auto split_sizes = manifest_.edge_splits.find(etype);
  if (split_sizes != manifest_.edge_splits.end()) {
    const int64_t dst_begin = dst->part_offsets[part_];
    const int64_t dst_end = dst->part_offsets[part_ + 1];
    for (const auto& [split, sizes] : split_sizes->second) {
      const std::string rel = EdgeSplitFilePath(part_, etype, split);
      const int64_t n = sizes[static_cast<size_t>(part_)];
      ASSIGN_OR_RETURN(absl::Span<const int64_t> both, OpenInt64(rel, {2, n}));
      EdgeSplitView view{both.subspan(0, static_cast<size_t>(n)),
                         both.subspan(static_cast<size_t>(n))};
      const std::string time_rel = EdgeSplitFilePath(part_, etype, absl::StrCat(split, "_time"));
      if (manifest_.files.count(time_rel) > 0) {
        ASSIGN_OR_RETURN(view.time, OpenInt64(time_rel, {n}));
        view.has_time = true;
      }
      RETURN_IF_ERROR(CheckIdsInRange(view.src, 0, src->num_nodes,
                                      absl::StrCat(dir_, "/", rel, " (row 0, sources)")));
      RETURN_IF_ERROR(CheckIdsInRange(view.dst, dst_begin, dst_end,
                                      absl::StrCat(dir_, "/", rel, " (row 1, destinations)")));
      s.splits[split] = view;
    }
    auto reverse = manifest_.edge_split_reverse.find(etype);
    if (reverse != manifest_.edge_split_reverse.end()) s.split_reverse = reverse->second;
    const std::string rel = EdgeSplitFilePath(part_, etype, "dst_degree");
    ASSIGN_OR_RETURN(s.dst_degree, OpenInt64(rel, {dst->num_nodes}));
    RETURN_IF_ERROR(CheckIdsInRange(s.dst_degree, 0, std::numeric_limits<int64_t>::max(),
                                    absl::StrCat(dir_, "/", rel)));
  }
  std::string time_rel = EdgeFilePath(part_, etype, "time.npy");
  if (manifest_.files.count(time_rel) > 0) {
    ASSIGN_OR_RETURN(s.time, OpenInt64(time_rel, {e}));
    s.has_time = true;
    // Temporal sampling binary-searches each neighbour list by time.
    for (int64_t v = 0; v < rows; ++v) {
      for (int64_t i = indptr[v] + 1; i < indptr[v + 1]; ++i) {
        if (s.time[i] < s.time[i - 1]) {
          return absl::DataLossError(absl::StrCat(dir_, "/", time_rel, ": times of local row ",
                                                  v, "'s in-edges are not ascending (index ", i,
                                                  ")"));
        }
      }
    }
  }
  edges_[etype] = std::move(s);
  return absl::OkStatus();
}

const NodeShard* PartitionPart::FindNodes(absl::string_view ntype) const {
  auto it = nodes_.find(ntype);
  return it == nodes_.end() ? nullptr : &it->second;
}

const EdgeShard* PartitionPart::FindEdges(absl::string_view etype) const {
  auto it = edges_.find(etype);
  return it == edges_.end() ? nullptr : &it->second;
}

const PartitionBook* PartitionPart::FindBook(absl::string_view ntype) const {
  auto it = books_.find(ntype);
  return it == books_.end() ? nullptr : &it->second;
}

}  // namespace graphshard::common
