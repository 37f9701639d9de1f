#include "server/engine/local_part.h"

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/half_rows.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "server/engine/request_cost.h"

namespace graphshard::engine {
namespace {

// How many seeds a sampling loop goes between two looks at its CancelFn.
constexpr size_t kCancelCheckEvery = 4096;
// How many rows ahead a feature gather prefetches (random reads from the mapped part).
constexpr size_t kRowsAhead = 4;

// Floyd's algorithm: k distinct positions in [0, n), each k-subset equally likely, in O(k).
// Small k use a linear scan of the chosen set (faster than hashing for the usual fanouts).
void SampleWithoutReplacement(int64_t n, int64_t k, common::SplitMix64& rng,
                              std::vector<int64_t>& out) {
  const size_t first = out.size();
  auto chosen = [&](int64_t v) {
    return std::find(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), v) != out.end();
  };
  if (k <= 32) {
    for (int64_t j = n - k; j < n; ++j) {
      int64_t t = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(j + 1)));
      out.push_back(chosen(t) ? j : t);
    }
    return;
  }
  absl::flat_hash_set<int64_t> set;
  set.reserve(static_cast<size_t>(k));
  for (int64_t j = n - k; j < n; ++j) {
    int64_t t = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(j + 1)));
    int64_t pick = set.contains(t) ? j : t;
    set.insert(pick);
    out.push_back(pick);
  }
}

}  // namespace

void ConvertFloatRow(const float* src, int64_t n, FeatureDtype dtype, char* dst) {
  if (n <= 0) return;  // a type without features: src and dst may be null
  switch (dtype) {
    case FeatureDtype::kFloat32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      break;
    case FeatureDtype::kFloat16:
      common::FloatsToHalf(src, n, dst);
      break;
    case FeatureDtype::kBFloat16:
      common::FloatsToBFloat16(src, n, dst);
      break;
  }
}

void WriteFeatureRow(const common::NodeShard& shard, int64_t row, FeatureDtype dtype, char* dst) {
  ConvertFloatRow(shard.features.data() + row * shard.feat_dim, shard.feat_dim, dtype, dst);
}

LocalPart::LocalPart(std::unique_ptr<const common::PartitionPart> part, Limits limits)
    : owned_part_(std::move(part)), part_(owned_part_.get()), limits_(limits) {}

absl::StatusOr<std::unique_ptr<LocalPart>> LocalPart::WithNodeRows(
    const LocalPart& base, std::vector<common::NodeShard> shards) {
  if (shards.size() != base.node_types_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(shards.size(), " node row tables for ",
                                                   base.node_types_.size(), " node types"));
  }
  for (size_t t = 0; t < shards.size(); ++t) {
    const common::NodeShard& b = *base.node_types_[t].shard;
    common::NodeShard& s = shards[t];
    if (s.begin != b.begin || s.end != b.end || s.feat_dim < 0 ||
        std::ssize(s.features) != b.num_rows() * s.feat_dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node rows of '", b.ntype, "': ids [", s.begin, ", ", s.end, "), ",
          s.features.size(), " values of dim ", s.feat_dim, "; the part owns [", b.begin, ", ",
          b.end, ")"));
    }
    s.ntype = b.ntype;
    s.labels = b.labels;
    s.orig_ids = b.orig_ids;
    s.splits = b.splits;
  }
  auto view = std::unique_ptr<LocalPart>(new LocalPart(nullptr, base.limits_));
  view->part_ = base.part_;
  view->own_shards_ = std::move(shards);
  view->node_types_ = base.node_types_;
  for (size_t t = 0; t < view->node_types_.size(); ++t) {
    view->node_types_[t].shard = &view->own_shards_[t];
  }
  view->edge_types_ = base.edge_types_;
  view->target_type_ = base.target_type_;
  return view;
}

absl::StatusOr<std::unique_ptr<LocalPart>> LocalPart::Create(
    std::unique_ptr<const common::PartitionPart> part, Limits limits) {
  auto local = std::unique_ptr<LocalPart>(new LocalPart(std::move(part), limits));
  const common::Manifest& m = local->part_->manifest();
  local->target_type_ = -1;
  for (const common::NodeTypeInfo& t : m.node_types) {
    if (local->target_type_ < 0 && t.num_classes > 0) {
      local->target_type_ = static_cast<int>(local->node_types_.size());
    }
    local->node_types_.push_back(
        {t.name, local->part_->FindBook(t.name), local->part_->FindNodes(t.name)});
  }
  if (local->target_type_ < 0) local->target_type_ = 0;
  for (const common::EdgeTypeInfo& t : m.edge_types) {
    local->edge_types_.push_back({t.Name(), local->NodeTypeIndex(t.src),
                                  local->NodeTypeIndex(t.dst), local->part_->FindEdges(t.Name())});
  }
  return local;
}

int LocalPart::NodeTypeIndex(absl::string_view name) const {
  for (size_t i = 0; i < node_types_.size(); ++i) {
    if (node_types_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int LocalPart::EdgeTypeIndex(absl::string_view name) const {
  for (size_t i = 0; i < edge_types_.size(); ++i) {
    if (edge_types_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

absl::Status LocalPart::CheckOwned(int node_type, absl::Span<const int64_t> ids,
                                   absl::string_view what) const {
  const NodeType& t = node_types_[node_type];
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = ids[i];
    if (id >= t.shard->begin && id < t.shard->end) continue;
    int owner = t.book->Owner(id);
    if (owner < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, "[", i, "] = ", id, " is not a '",
                                                     t.name, "' node id (", t.book->num_nodes(),
                                                     " nodes)"));
    }
    return absl::InvalidArgumentError(absl::StrCat(what, "[", i, "] = ", id, " is owned by part ",
                                                   owner, ", not by this part ", part_index()));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> LocalPart::ItemEdges(const HopItem& item, bool replace) const {
  int e = EdgeTypeIndex(item.edge_type);
  if (e < 0) {
    return absl::InvalidArgumentError(absl::StrCat("unknown edge type '", item.edge_type, "'"));
  }
  if (item.fanout < -1 || item.fanout > limits_.max_fanout) {
    return absl::InvalidArgumentError(absl::StrCat("fanout ", item.fanout, " is outside -1..",
                                                   limits_.max_fanout));
  }
  const EdgeType& et = edge_types_[e];
  RETURN_IF_ERROR(CheckOwned(et.dst, item.seeds, absl::StrCat(item.edge_type, " seeds")));
  const int64_t begin = node_types_[et.dst].shard->begin;
  const common::CscView& csc = et.shard->csc;
  int64_t edges = 0;
  for (int64_t id : item.seeds) {
    const int64_t deg = csc.EdgeEnd(id - begin) - csc.EdgeBegin(id - begin);
    edges += item.fanout < 0 ? deg : replace ? (deg > 0 ? item.fanout : 0)
                                             : std::min<int64_t>(deg, item.fanout);
  }
  return edges;
}

absl::Status LocalPart::SampleItem(const HopItem& item, const OneHopRequest& request,
                                   const CancelFn& cancelled, HopResult& out) const {
  const bool replace = request.replace;
  int e = EdgeTypeIndex(item.edge_type);
  if (e < 0) {
    return absl::InvalidArgumentError(absl::StrCat("unknown edge type '", item.edge_type, "'"));
  }
  if (item.fanout < -1 || item.fanout > limits_.max_fanout) {
    return absl::InvalidArgumentError(absl::StrCat("fanout ", item.fanout, " is outside -1..",
                                                   limits_.max_fanout));
  }
  const bool temporal = request.temporal != TemporalMode::kOff;
  if (temporal ? item.times.size() != item.seeds.size() : !item.times.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        item.edge_type, ": ", item.times.size(), " seed times for ", item.seeds.size(),
        " seeds", temporal ? " (temporal sampling needs one per seed)" : " without temporal mode"));
  }
  const EdgeType& et = edge_types_[e];
  RETURN_IF_ERROR(CheckOwned(et.dst, item.seeds, absl::StrCat(item.edge_type, " seeds")));
  const int64_t begin = node_types_[et.dst].shard->begin;
  const common::CscView& csc = et.shard->csc;
  // Edge types without times are not constrained (static relations).
  const absl::Span<const int64_t> edge_time = temporal ? et.shard->time : absl::Span<const int64_t>();
  const bool strict = request.temporal == TemporalMode::kBefore;
  const bool last = request.temporal_strategy == TemporalStrategy::kLast;
  const size_t n = item.seeds.size();
  out.counts.reserve(n);
  if (item.fanout >= 0) out.neighbors.reserve(n * static_cast<size_t>(item.fanout));
  // Two passes, because memory latency bounds this loop. Pass 1 reads each seed's offsets
  // (fetched 16 seeds ahead), draws its picks and writes their edge positions into
  // out.neighbors; pass 2 replaces each position by its source node, fetching the exact entry
  // 16 picks ahead (a seed's picks are scattered over its whole neighbour list).
  const size_t base = out.neighbors.size();
  std::vector<int64_t> picks;
  for (size_t i = 0; i < n; ++i) {
    if (cancelled && i % kCancelCheckEvery == kCancelCheckEvery - 1 && cancelled()) {
      return absl::CancelledError("the request was cancelled");
    }
    if (i + 16 < n) csc.PrefetchOffsets(item.seeds[i + 16] - begin);
    const int64_t id = item.seeds[i];
    const int64_t first = csc.EdgeBegin(id - begin);
    int64_t deg = csc.EdgeEnd(id - begin) - first;
    const int64_t k = item.fanout;
    if (!edge_time.empty()) {
      // In-edges ascend by time (partition.h): the eligible ones are a prefix.
      const int64_t* lo = edge_time.data() + first;
      const int64_t* hi = lo + deg;
      deg = (strict ? std::lower_bound(lo, hi, item.times[i]) : std::upper_bound(lo, hi, item.times[i])) - lo;
      if (last && k >= 0) {  // the k most recent eligible edges (replace does not apply)
        const int64_t take = std::min(k, deg);
        for (int64_t p = first + deg - take; p < first + deg; ++p) out.neighbors.push_back(p);
        out.counts.push_back(take);
        continue;
      }
    }
    if (k < 0 || (!replace && deg <= k)) {
      for (int64_t p = first; p < first + deg; ++p) out.neighbors.push_back(p);
      out.counts.push_back(deg);
      continue;
    }
    common::SplitMix64 rng(common::MixSeed(item.seed, static_cast<uint64_t>(id)));
    picks.clear();
    if (replace) {
      for (int64_t j = 0; deg > 0 && j < k; ++j) {
        picks.push_back(static_cast<int64_t>(rng.Below(static_cast<uint64_t>(deg))));
      }
    } else {
      SampleWithoutReplacement(deg, k, rng, picks);
    }
    for (int64_t p : picks) out.neighbors.push_back(first + p);
    out.counts.push_back(std::ssize(picks));
  }
  constexpr size_t kAhead = 16;
  std::vector<int64_t>& nb = out.neighbors;
  for (size_t j = base; j < nb.size(); ++j) {
    if (j + kAhead < nb.size()) csc.PrefetchSource(nb[j + kAhead]);
    nb[j] = csc.Source(nb[j]);
  }
  return absl::OkStatus();
}

absl::Status LocalPart::CheckHopCost(const OneHopRequest& request) const {
  int64_t total = 0;
  for (const HopItem& item : request.items) total += std::ssize(item.seeds);
  if (total > limits_.max_request_ids) {
    return absl::InvalidArgumentError(absl::StrCat(total, " seeds exceed the limit ",
                                                   limits_.max_request_ids));
  }
  RequestCost cost;
  for (const HopItem& item : request.items) {
    ASSIGN_OR_RETURN(int64_t edges, ItemEdges(item, request.replace));
    cost.edges += static_cast<double>(edges);
  }
  cost.nodes = cost.edges;
  cost.bytes = 8.0 * static_cast<double>(total) + 16.0 * cost.edges;
  return CheckCost(cost, limits_, absl::StrCat("a hop of ", total, " seeds"));
}

absl::StatusOr<std::vector<HopResult>> LocalPart::SampleOneHop(const OneHopRequest& request,
                                                                const CancelFn& cancelled) const {
  int64_t total = 0;
  for (const HopItem& item : request.items) total += std::ssize(item.seeds);
  if (total > limits_.max_request_ids) {
    return absl::InvalidArgumentError(absl::StrCat(total, " seeds exceed the limit ",
                                                   limits_.max_request_ids));
  }
  std::vector<HopResult> results(request.items.size());
  for (size_t i = 0; i < request.items.size(); ++i) {
    RETURN_IF_ERROR(SampleItem(request.items[i], request, cancelled, results[i]));
  }
  return results;
}

absl::StatusOr<std::vector<FeatureBlock>> LocalPart::GatherFeatures(
    absl::Span<const TypedIds> items, FeatureDtype dtype) const {
  int64_t total = 0;
  for (const TypedIds& item : items) total += std::ssize(item.ids);
  if (total > limits_.max_request_ids) {
    return absl::InvalidArgumentError(absl::StrCat(total, " ids exceed the limit ",
                                                   limits_.max_request_ids));
  }
  RETURN_IF_ERROR(CheckCost(GatherCost(*this, items, dtype), limits_,
                            absl::StrCat("a gather of ", total, " rows")));
  std::vector<FeatureBlock> blocks(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    int t = NodeTypeIndex(items[i].node_type);
    if (t < 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown node type '", items[i].node_type,
                                                     "'"));
    }
    RETURN_IF_ERROR(CheckOwned(t, items[i].ids, absl::StrCat(items[i].node_type, " ids")));
    const common::NodeShard& shard = *node_types_[t].shard;
    FeatureBlock& b = blocks[i];
    b.feat_dim = shard.feat_dim;
    const size_t row_bytes =
        static_cast<size_t>(shard.feat_dim) * static_cast<size_t>(common::FeatureBytes(dtype));
    b.features.resize(items[i].ids.size() * row_bytes);
    b.labels.resize(items[i].ids.size());
    const std::vector<int64_t>& ids = items[i].ids;
    const size_t src_row_bytes = static_cast<size_t>(shard.feat_dim) * sizeof(float);
    for (size_t j = 0; j < ids.size(); ++j) {
      // Rows are random reads from the mapped part: the row kRowsAhead ahead is fetched while
      // this one is copied (CheckOwned checked every id above).
      if (j + kRowsAhead < ids.size()) {
        const int64_t ahead = ids[j + kRowsAhead] - shard.begin;
        const char* next = reinterpret_cast<const char*>(shard.features.data() +
                                                         ahead * shard.feat_dim);
        for (size_t at = 0; at < src_row_bytes; at += 64) __builtin_prefetch(next + at);
        __builtin_prefetch(shard.labels.data() + ahead);
      }
      const int64_t row = ids[j] - shard.begin;
      WriteFeatureRow(shard, row, dtype, b.features.data() + j * row_bytes);
      b.labels[j] = shard.labels[row];
    }
  }
  return blocks;
}

}  // namespace graphshard::engine
