#ifndef GRAPHSHARD_COMMON_PARTITION_PART_H_
#define GRAPHSHARD_COMMON_PARTITION_PART_H_

// One part of a partition folder, mmap'ed and validated against the manifest.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/csc.h"
#include "common/manifest.h"
#include "common/npy.h"
#include "common/progress.h"

namespace graphshard::common {

// The nodes of one type that a part owns: global ids [begin, end); local row = id - begin.
struct NodeShard {
  std::string ntype;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t feat_dim = 0;
  absl::Span<const float> features;  // [end - begin, feat_dim]
  absl::Span<const int64_t> labels;  // [end - begin]; -1 = unlabelled
  absl::Span<const int64_t> orig_ids;  // [end - begin]: id in the input graph
  std::map<std::string, absl::Span<const int64_t>> splits;  // name -> ascending global ids
  bool has_time = false;           // nodes/<t>/time.npy exists (for every part)
  absl::Span<const int64_t> time;  // [end - begin] node times when has_time
  int64_t num_rows() const { return end - begin; }
};

// Supervision edges of one split (link prediction): edge i is src[i] -> dst[i], global ids,
// every dst owned by this part.
struct EdgeSplitView {
  absl::Span<const int64_t> src;
  absl::Span<const int64_t> dst;
  // edge_splits/<et>/<split>_time.npy, when the manifest lists it: each edge's time [size()].
  bool has_time = false;
  absl::Span<const int64_t> time{};
  int64_t size() const { return static_cast<int64_t>(src.size()); }
};

// The in-edges of one edge type whose destination this part owns.
struct EdgeShard {
  EdgeTypeInfo info;
  CscView csc;                         // rows = local dst rows of info.dst
  absl::Span<const int64_t> edge_ids;  // [num_edges]: edge id in the input graph
  // Link prediction, when the partition has edge splits of this type: "train" / "val" / "test",
  // and every dst-type node's number of training edges (global, [num dst nodes]).
  std::map<std::string, EdgeSplitView> splits{};
  absl::Span<const int64_t> dst_degree{};
  std::string split_reverse{};  // the edge type holding these edges reversed ("" = none)
  // edges/<et>/time.npy exists (for every part): [num_edges] edge times, ascending within each
  // destination's in-edges.
  bool has_time = false;
  absl::Span<const int64_t> time;
};

struct LoadOptions {
  // CRC-32 of every file (reads all bytes once). Off only for tools that just peek.
  bool verify_checksums = true;
  // Progress of checking the part's files, in bytes (log nullptr = none): a server's start on
  // a large part reads every byte once.
  ProgressOptions progress = {};
};

// Thread-safe (immutable after Load). Owns the mappings its spans point into.
class PartitionPart {
 public:
  // Loads `<dir>/part_<part>`. Errors name the file: NotFound (missing), DataLoss (truncated,
  // wrong dtype or shape, checksum mismatch, ids out of range, edge times not ascending within
  // a destination), InvalidArgument (manifest). Time files are loaded when the manifest lists
  // them.
  static absl::StatusOr<std::unique_ptr<PartitionPart>> Load(const std::string& dir, int part,
                                                             const LoadOptions& options = {});

  int part() const { return part_; }
  const Manifest& manifest() const { return manifest_; }
  // nullptr if the type is unknown.
  const NodeShard* FindNodes(absl::string_view ntype) const;
  const EdgeShard* FindEdges(absl::string_view etype) const;
  const PartitionBook* FindBook(absl::string_view ntype) const;

 private:
  PartitionPart() = default;
  absl::StatusOr<absl::Span<const int64_t>> OpenInt64(const std::string& rel,
                                                      std::vector<int64_t> shape);
  absl::StatusOr<absl::Span<const float>> OpenFloat(const std::string& rel,
                                                    std::vector<int64_t> shape);
  // InvalidArgument naming the manifest, the field and the file unless `stated` (the
  // manifest's <array>_dtype of `info`) is `needed`.
  absl::Status CheckStatedDtype(const NodeTypeInfo& info, absl::string_view array,
                                const std::string& stated, DType needed) const;
  absl::StatusOr<NpyFile> OpenChecked(const std::string& rel, DType dtype,
                                      const std::vector<int64_t>& shape);
  absl::Status LoadNodes(const NodeTypeInfo& info);
  absl::Status LoadEdges(const EdgeTypeInfo& info);

  std::string dir_;
  int part_ = 0;
  ProgressLine* progress_ = nullptr;  // during Load only
  LoadOptions options_;
  Manifest manifest_;
  std::vector<NpyFile> files_;  // keeps the mappings alive
  std::map<std::string, NodeShard, std::less<>> nodes_;
  std::map<std::string, EdgeShard, std::less<>> edges_;
  std::map<std::string, PartitionBook, std::less<>> books_;
};

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_PARTITION_PART_H_
