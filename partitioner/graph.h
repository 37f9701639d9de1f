#ifndef GRAPHSHARD_PARTITIONER_GRAPH_H_
#define GRAPHSHARD_PARTITIONER_GRAPH_H_

// The partitioner's one graph model: node types and edge types (src_type, rel, dst_type), ids
// per type, arrays that are either owned vectors or read-only mmaps of input .npy files. Every
// reader and generator produces one; PartitionGraph and the input writers consume one, and
// validate it once, at their entry (ValidateGraph). A homogeneous graph is the one-type case
// (node type "node", edge type "node__to__node"). Not thread-safe for writers; const use is.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace graphshard::partitioner {

inline constexpr char kHomogeneousNodeType[] = "node";
inline constexpr char kHomogeneousRelation[] = "to";

// A read-only array: an owned vector, an mmap'ed file region (kept alive by `keep`), or a plain
// view of memory the caller keeps alive. Copies share the data.
template <typename T>
class Array {
 public:
  Array() = default;
  static Array Owned(std::vector<T> values) {
    auto holder = std::make_shared<std::vector<T>>(std::move(values));
    Array a;
    a.span_ = absl::Span<const T>(*holder);
    a.keep_ = std::move(holder);
    return a;
  }
  static Array View(absl::Span<const T> values) {
    Array a;
    a.span_ = values;
    return a;
  }
  // `keep` owns the mapping `values` points into; the pages may be dropped from the resident
  // set with ReleasePages (they are re-read from the page cache on the next access).
  static Array Mapped(std::shared_ptr<const void> keep, absl::Span<const T> values) {
    Array a;
    a.span_ = values;
    a.keep_ = std::move(keep);
    a.mapped_ = true;
    return a;
  }

  absl::Span<const T> span() const { return span_; }
  int64_t size() const { return static_cast<int64_t>(span_.size()); }
  bool empty() const { return span_.empty(); }
  const T& operator[](int64_t i) const { return span_[static_cast<size_t>(i)]; }
  std::vector<T> ToVector() const { return std::vector<T>(span_.begin(), span_.end()); }
  bool mapped() const { return mapped_; }
  // Elements [offset, offset + count), sharing the data.
  Array Slice(int64_t offset, int64_t count) const {
    Array a = *this;
    a.span_ = span_.subspan(static_cast<size_t>(offset), static_cast<size_t>(count));
    return a;
  }
  // For mapped arrays, drops the whole pages inside [begin, end) from this process's resident
  // set (madvise DONTNEED on a read-only file mapping: data stays valid). No-op otherwise.
  void ReleasePages(int64_t begin, int64_t end) const;

 private:
  absl::Span<const T> span_;
  std::shared_ptr<const void> keep_;
  bool mapped_ = false;
};

void ReleaseMappedPages(const void* begin, size_t bytes);

template <typename T>
void Array<T>::ReleasePages(int64_t begin, int64_t end) const {
  if (!mapped_ || begin >= end) return;
  ReleaseMappedPages(span_.data() + begin, static_cast<size_t>(end - begin) * sizeof(T));
}

struct NodeTypeData {
  std::string name;
  int64_t num_nodes = 0;
  int64_t feat_dim = 0;
  Array<float> features;    // row-major [num_nodes, feat_dim]; empty when feat_dim == 0
  Array<int64_t> labels;    // [num_nodes] (negative = unlabelled) or empty (no labels)
  int64_t num_classes = 0;  // labels lie in [-inf, num_classes); 0 when unlabelled
  // "train", "val", "test" -> distinct ids of this type.
  std::map<std::string, Array<int64_t>> splits;
  // [num_nodes] or empty: each node's time (any int64 scale, e.g. Unix seconds), the seed time
  // of temporal sampling (docs/SERVER.md, "Temporal sampling").
  Array<int64_t> time;
};

// Supervision edges of one split (link prediction): src_ids[i] -> dst_ids[i].
struct EdgeSplitData {
  Array<int64_t> src_ids;
  Array<int64_t> dst_ids;
  // [n] or empty: each supervision edge's time (its edge's), the seed time of temporal link
  // sampling (PyG's edge_label_time).
  Array<int64_t> time;
};

// Edge e is src_ids[e] -> dst_ids[e]; e is its edge id within this edge type.
struct EdgeTypeData {
  std::string src;
  std::string rel;
  std::string dst;
  Array<int64_t> src_ids;
  Array<int64_t> dst_ids;
  // Link prediction: "train" / "val" / "test" -> supervision edges (edge_split.h, SplitEdges).
  std::map<std::string, EdgeSplitData> splits{};
  // With splits: the edge type that holds these edges reversed ("" = none), whose reversed
  // held-out edges were removed too and whose reversed supervision edges the sampler leaves out.
  std::string split_reverse{};
  // [num_edges] or empty: each edge's time. Temporal sampling keeps only edges at or before the
  // seed's time; without it, an edge whose source type has node times takes its source's time.
  Array<int64_t> time;
  std::string Name() const { return src + "__" + rel + "__" + dst; }
  int64_t num_edges() const { return src_ids.size(); }
};

struct Graph {
  std::vector<NodeTypeData> node_types;
  std::vector<EdgeTypeData> edge_types;

  // -1 if unknown.
  int NodeTypeIndex(absl::string_view name) const;
  int64_t TotalNodes() const;
  int64_t TotalEdges() const;
  bool IsHomogeneous() const { return node_types.size() == 1 && edge_types.size() <= 1; }
};

// The one-type graph: node type "node" with `num_nodes` nodes (no features, labels or splits:
// set them on node_types[0]) and edge type "node__to__node" with the edges src[e] -> dst[e].
Graph HomogeneousGraph(int64_t num_nodes, std::vector<int64_t> src, std::vector<int64_t> dst);

// InvalidArgument naming the type and field unless: names are non-empty and free of "/" and
// "__" (they become folder names), node types distinct, edge types distinct and name known node
// types, array sizes match, every edge endpoint and split id is in range, split names are
// train/val/test and split ids distinct, edge splits named train/val/test with endpoints in
// range, labels < num_classes (negative = unlabelled), times absent or one per node / edge.
// Scans
// every edge once. The consumers call it at their entry; readers and generators do not.
absl::Status ValidateGraph(const Graph& g);

// Edge-list transformations, per edge type, producing owned arrays; edge ids are renumbered as
// positions in the new lists (documented in README.md).
struct EdgeTransformOptions {
  bool drop_self_loops = false;
  bool dedup = false;  // keep the first occurrence of each (src, dst)
  // PyG's ToUndirected: a relation between two different node types gets a reverse relation
  // (dst, "rev_" + rel, src); a relation within one type is symmetrised (its list, then the
  // reversed list, later repeats dropped).
  bool undirected = false;
};
// Validates `g` first (ValidateGraph); afterwards InvalidArgument only if a reverse relation
// takes the name of an existing edge type.
absl::Status TransformEdges(Graph& g, const EdgeTransformOptions& options);

}  // namespace graphshard::partitioner

#endif  // GRAPHSHARD_PARTITIONER_GRAPH_H_
