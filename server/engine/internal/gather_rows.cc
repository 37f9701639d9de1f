// GatherAll (minibatch_steps.h): find each row's source, place the batch's rows, copy the rows
// of parts mapped in-process while the other owners are asked, then copy their answers.

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "server/engine/internal/ask_parts.h"
#include "server/engine/internal/minibatch_steps.h"

namespace graphshard::engine::internal {
namespace {

// How many feature rows ahead the gather prefetches.
constexpr size_t kRowsAhead = 4;

// Per part: its answer (one FeatureBlock per item of its request), nullopt where nothing was
// asked.
using RowAnswers = std::vector<std::optional<std::vector<FeatureBlock>>>;

// The node shard of `node_type` in `part`, or nullptr.
const common::NodeShard* ShardOf(const LocalPart& part, const std::string& node_type) {
  const int t = part.NodeTypeIndex(node_type);
  return t < 0 ? nullptr : part.node_types()[t].shard;
}

// Without features (SamplingConfig::without_features): no rows, the seeds' labels only (the
// seeds are owned by the local part; link batches need none), -1 elsewhere. The placer still
// runs, with empty rows, so that the batch's other arrays go where they would.
absl::Status LabelSeedsOnly(const LocalPart& local, const MinibatchRequest& request,
                            Minibatch& batch) {
  // Labels first: the placer sizes the batch's memory by them.
  for (NodeBlock& block : batch.nodes) block.labels.assign(block.ids.size(), -1);
  if (request.place_features) {
    ASSIGN_OR_RETURN(std::vector<absl::Span<char>> out,
                     request.place_features(batch, std::vector<size_t>(batch.nodes.size(), 0)));
    if (out.size() != batch.nodes.size()) {
      return absl::InternalError("the feature placer returned the wrong number of spans");
    }
    for (size_t t = 0; t < batch.nodes.size(); ++t) {
      batch.nodes[t].placed = true;
      batch.nodes[t].placed_features = out[t];
    }
  }
  if (!batch.link.edge_type.empty()) return absl::OkStatus();
  for (NodeBlock& block : batch.nodes) {
    if (block.node_type != batch.seed_type) continue;
    const common::NodeShard* shard = ShardOf(local, block.node_type);
    const size_t seeds = std::min(request.seeds.size(), block.ids.size());
    for (size_t j = 0; j < seeds; ++j) {
      const int64_t id = block.ids[j];
      if (shard == nullptr || id < shard->begin || id >= shard->end) {
        return absl::InternalError(absl::StrCat("seed ", id, " of '", block.node_type,
                                                "' is not in the local part"));
      }
      block.labels[j] = shard->labels[id - shard->begin];
    }
  }
  return absl::OkStatus();
}

// Where every row of the batch comes from: read directly from a part mapped in this process
// (our own, and same-host peers that `peers` mapped), or asked of its owner, one request per
// owner covering every node type.
struct RowSources {
  std::vector<const LocalPart*> direct;      // per part: mapped here, or nullptr
  std::vector<std::vector<TypedIds>> requests;  // per part: the ids to ask it for, per item
  std::vector<bool> asked;                   // per part: whether requests[p] has items
  // where[t][j] = (part, item, row within item); item -1 = read directly from direct[part].
  std::vector<std::vector<Slot>> where;
  bool any_direct = false;
};

RowSources FindRowSources(const LocalPart& local, Peers& peers,
                          const std::vector<NodeBlock>& nodes) {
  const int k = local.num_parts();
  RowSources out;
  out.direct.assign(k, nullptr);
  std::vector<bool> looked_up(k, false);
  out.direct[local.part_index()] = &local;
  looked_up[local.part_index()] = true;
  out.requests.resize(k);
  out.asked.assign(k, false);
  out.where.resize(nodes.size());
  for (size_t t = 0; t < nodes.size(); ++t) {
    std::vector<int> item_of(k, -1);
    const common::PartitionBook& book = *local.node_types()[t].book;
    out.where[t].reserve(nodes[t].ids.size());
    for (int64_t id : nodes[t].ids) {
      int p = book.Owner(id);
      if (!looked_up[p]) {
        out.direct[p] = peers.MappedPart(p);
        looked_up[p] = true;
      }
      if (out.direct[p] != nullptr) {
        out.where[t].push_back({p, -1, 0});
        out.any_direct = true;
        continue;
      }
      if (item_of[p] < 0) {
        item_of[p] = static_cast<int>(out.requests[p].size());
        out.requests[p].push_back({nodes[t].node_type, {}});
        out.asked[p] = true;
      }
      std::vector<int64_t>& ids = out.requests[p][item_of[p]].ids;
      out.where[t].push_back({p, item_of[p], std::ssize(ids)});
      ids.push_back(id);
    }
  }
  return out;
}

// Sizes every block's labels and finds where its rows go (out[t]): where the request's placer
// puts them (the blocks are then marked placed), else the blocks' own `features`.
absl::StatusOr<std::vector<absl::Span<char>>> PlaceRows(const FeaturePlacer& place,
                                                        Minibatch& batch) {
  std::vector<NodeBlock>& nodes = batch.nodes;
  const size_t elem = static_cast<size_t>(common::FeatureBytes(batch.feature_dtype));
  std::vector<size_t> feature_bytes;
  for (NodeBlock& block : nodes) {
    feature_bytes.push_back(block.ids.size() * static_cast<size_t>(block.feat_dim) * elem);
    block.labels.resize(block.ids.size());
  }
  std::vector<absl::Span<char>> out(nodes.size());
  if (place) {
    ASSIGN_OR_RETURN(out, place(batch, feature_bytes));
    if (out.size() != nodes.size()) {
      return absl::InternalError("the feature placer returned the wrong number of spans");
    }
    for (size_t t = 0; t < nodes.size(); ++t) {
      if (out[t].size() != feature_bytes[t]) {
        return absl::InternalError("the feature placer returned a span of the wrong size");
      }
      nodes[t].placed = true;
      nodes[t].placed_features = out[t];
    }
  } else {
    for (size_t t = 0; t < nodes.size(); ++t) {
      nodes[t].features.resize(feature_bytes[t]);
      out[t] = absl::MakeSpan(nodes[t].features);
    }
  }
  return out;
}

// Rows are random reads: fetches row j + kRowsAhead of `block` (if it is read directly) while
// row j is copied. `shards`: per part, the block type's shard where already looked up.
void PrefetchRowAhead(const NodeBlock& block, absl::Span<const Slot> where, size_t j,
                      const std::vector<const common::NodeShard*>& shards) {
  const Slot& ahead = where[j + kRowsAhead];
  const common::NodeShard* shard_ahead = ahead.item < 0 ? shards[ahead.part] : nullptr;
  const int64_t id_ahead = block.ids[j + kRowsAhead];
  if (shard_ahead != nullptr && id_ahead >= shard_ahead->begin && id_ahead < shard_ahead->end) {
    const char* row = reinterpret_cast<const char*>(
        shard_ahead->features.data() + (id_ahead - shard_ahead->begin) * block.feat_dim);
    for (size_t b = 0; b < static_cast<size_t>(block.feat_dim) * 4; b += 64) {
      __builtin_prefetch(row + b);
    }
    __builtin_prefetch(shard_ahead->labels.data() + (id_ahead - shard_ahead->begin));
  }
}

// Copies the rows and labels of `block` that are read directly (RowSources) into `out`,
// converted to `dtype`. Internal if a mapped part has no such row.
absl::Status WriteDirectRows(const MinibatchRequest& request, const RowSources& sources,
                             FeatureDtype dtype, absl::Span<const Slot> where, NodeBlock& block,
                             absl::Span<char> out) {
  const size_t row_bytes =
      static_cast<size_t>(block.feat_dim) * static_cast<size_t>(common::FeatureBytes(dtype));
  std::vector<const common::NodeShard*> shards(sources.direct.size(), nullptr);
  for (size_t j = 0; j < block.ids.size(); ++j) {
    if (j % kCancelCheckEvery == kCancelCheckEvery - 1) {
      RETURN_IF_ERROR(CheckCancelled(request));
    }
    const Slot& s = where[j];
    if (s.item >= 0) continue;
    if (j + kRowsAhead < block.ids.size() && row_bytes > 0) {
      PrefetchRowAhead(block, where, j, shards);
    }
    const common::NodeShard*& shard = shards[s.part];
    if (shard == nullptr) shard = ShardOf(*sources.direct[s.part], block.node_type);
    const int64_t id = block.ids[j];
    if (shard == nullptr || shard->feat_dim != block.feat_dim || id < shard->begin ||
        id >= shard->end) {
      return absl::InternalError(absl::StrCat("part ", s.part, " (read in this process) has no '",
                                              block.node_type, "' row for id ", id));
    }
    if (row_bytes > 0) {
      WriteFeatureRow(*shard, id - shard->begin, dtype, out.data() + j * row_bytes);
    }
    block.labels[j] = shard->labels[id - shard->begin];
  }
  return absl::OkStatus();
}

// Copies the rows and labels of `block` that its owners answered into `out`. Internal for a
// missing or malformed answer, naming the part.
absl::Status CopyAnsweredRows(const RowAnswers& results, size_t elem,
                              absl::Span<const Slot> where, NodeBlock& block,
                              absl::Span<char> out) {
  const size_t row_bytes = static_cast<size_t>(block.feat_dim) * elem;
  for (size_t j = 0; j < block.ids.size(); ++j) {
    const Slot& s = where[j];
    if (s.item < 0) continue;
    if (!results[s.part].has_value() || std::ssize(*results[s.part]) <= s.item) {
      return absl::InternalError(absl::StrCat("part ", s.part, " answered too few blocks"));
    }
    const FeatureBlock& fb = (*results[s.part])[s.item];
    if (fb.feat_dim != block.feat_dim || std::ssize(fb.labels) <= s.pos ||
        !fb.HasRowsOf(static_cast<int64_t>(row_bytes))) {
      return absl::InternalError(absl::StrCat("part ", s.part, " answered a malformed block"));
    }
    if (row_bytes > 0) {
      std::memcpy(out.data() + j * row_bytes, fb.Row(s.pos, static_cast<int64_t>(row_bytes)),
                  row_bytes);
    }
    block.labels[j] = fb.labels[s.pos];
  }
  return absl::OkStatus();
}

}  // namespace

// Rows of parts readable in this process are copied straight from the part into the output
// while the requests to the other owners are in flight: one copy instead of gather -> message
// -> decode -> output.
absl::Status GatherAll(const LocalPart& local, Peers& peers, const MinibatchRequest& request,
                       Minibatch& batch, BuildProfile& profile) {
  if (request.sampling.without_features) return LabelSeedsOnly(local, request, batch);
  std::vector<NodeBlock>& nodes = batch.nodes;
  const FeatureDtype dtype = batch.feature_dtype;
  RowSources sources = FindRowSources(local, peers, nodes);
  ASSIGN_OR_RETURN(const std::vector<absl::Span<char>> out,
                   PlaceRows(request.place_features, batch));
  // Runs as AskParts' local answer (asked[self] stands for every direct part): fills the rows
  // of the direct parts; the empty result is never read.
  auto write_direct =
      [&](const std::vector<TypedIds>&) -> absl::StatusOr<std::vector<FeatureBlock>> {
    for (size_t t = 0; t < nodes.size(); ++t) {
      RETURN_IF_ERROR(WriteDirectRows(request, sources, dtype, sources.where[t], nodes[t], out[t]));
    }
    return std::vector<FeatureBlock>{};
  };
  int64_t requests_sent = 0;  // on this thread: AskParts calls `remote` before it waits
  sources.asked[local.part_index()] = sources.any_direct;
  ASSIGN_OR_RETURN(
      const RowAnswers results,
      (AskParts<std::vector<FeatureBlock>>(
          sources.requests, sources.asked, local.part_index(),
          [&](int p, std::vector<TypedIds> r, Peers::Callback<std::vector<FeatureBlock>> done) {
            ++requests_sent;
            peers.GatherFeatures(p, std::move(r), dtype, std::move(done));
          },
          write_direct)));
  profile.peer_requests += requests_sent;
  profile.peer_rounds += requests_sent > 0 ? 1 : 0;
  const size_t elem = static_cast<size_t>(common::FeatureBytes(dtype));
  for (size_t t = 0; t < nodes.size(); ++t) {
    RETURN_IF_ERROR(CopyAnsweredRows(results, elem, sources.where[t], nodes[t], out[t]));
  }
  return absl::OkStatus();
}

}  // namespace graphshard::engine::internal
