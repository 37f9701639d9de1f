// RunHop (minibatch_steps.h): split the frontier by owner, ask the owners, check their answers,
// merge them edge type by edge type.

#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/batch_order.h"
#include "common/status_macros.h"
#include "server/engine/internal/ask_parts.h"
#include "server/engine/internal/minibatch_steps.h"
#include "server/engine/minibatch_builder.h"

namespace graphshard::engine::internal {
namespace {

// How many neighbours ahead the merge prefetches their relabelling slot.
constexpr int64_t kPrefetchAhead = 16;

// Per part: its answer (one HopResult per item of its request), nullopt where nothing was asked.
using HopAnswers = std::vector<std::optional<std::vector<HopResult>>>;
// [part][item][seed]: where each seed's neighbours start in its item's result (counts + 1).
using NeighbourOffsets = std::vector<std::vector<std::vector<int64_t>>>;

// One hop's requests, ONE per owner part covering every edge type, and where each frontier
// node's sample is to be found in the answers.
struct HopRequests {
  std::vector<int64_t> frontier_end;     // per node type: its frontier is [frontier_begin, end)
  std::vector<OneHopRequest> requests;   // per part
  std::vector<bool> asked;               // per part: whether requests[p] has items
  std::vector<std::vector<Slot>> slots;  // per edge type: one per frontier node of its dst type
  // Per part, per item: how many seeds. Kept because AskParts moves the requests out.
  std::vector<std::vector<size_t>> item_sizes;
};

// Adds edge type e's frontier to the requests: one item per owner part with the frontier nodes
// it owns (and their trees' times when temporal), one slot per frontier node.
void AddEdgeTypeItems(const LocalPart& local, const MinibatchRequest& request,
                      const std::vector<int64_t>& seed_times, int hop, int32_t fanout,
                      size_t e, const std::vector<NodeIndex>& types, HopRequests& out) {
  const bool temporal = request.sampling.temporal != TemporalMode::kOff;
  const EdgeType& etype = local.edge_types()[e];
  const NodeIndex& dst = types[etype.dst];
  const int64_t end = out.frontier_end[etype.dst];
  std::vector<int> item_of(local.num_parts(), -1);
  const common::PartitionBook& book = *local.node_types()[etype.dst].book;
  out.slots[e].reserve(static_cast<size_t>(end - dst.frontier_begin));
  for (int64_t j = dst.frontier_begin; j < end; ++j) {
    int p = book.Owner(dst.ids[j]);
    std::vector<HopItem>& items = out.requests[p].items;
    if (item_of[p] < 0) {
      item_of[p] = static_cast<int>(items.size());
      const uint64_t item_seed = common::HopItemSeed(request.seed, hop, e);
      items.push_back({etype.name, {}, fanout, item_seed});
      out.asked[p] = true;
    }
    HopItem& item = items[item_of[p]];
    out.slots[e].push_back({p, item_of[p], std::ssize(item.seeds)});
    item.seeds.push_back(dst.ids[j]);
    if (temporal) item.times.push_back(seed_times[dst.tree[j]]);
  }
}

// Splits the frontier of every sampled edge type (fanout not 0) by the owners of its nodes.
HopRequests SplitFrontier(const LocalPart& local, const MinibatchRequest& request,
                          const std::vector<int64_t>& seed_times, int hop,
                          const std::vector<NodeIndex>& types) {
  const int k = local.num_parts();
  const auto& etypes = local.edge_types();
  HopRequests out;
  out.frontier_end.resize(types.size());
  for (size_t t = 0; t < types.size(); ++t) out.frontier_end[t] = std::ssize(types[t].ids);
  out.requests.resize(k);
  out.asked.assign(k, false);
  out.slots.resize(etypes.size());
  for (size_t e = 0; e < etypes.size(); ++e) {
    const int32_t fanout = FanoutOf(request.sampling, etypes[e].name, hop);
    const NodeIndex& dst = types[etypes[e].dst];
    if (fanout == 0 || dst.frontier_begin == out.frontier_end[etypes[e].dst]) continue;
    AddEdgeTypeItems(local, request, seed_times, hop, fanout, e, types, out);
  }
  out.item_sizes.resize(k);
  for (int p = 0; p < k; ++p) {
    out.requests[p].replace = request.sampling.replace;
    out.requests[p].temporal = request.sampling.temporal;
    out.requests[p].temporal_strategy = request.sampling.temporal_strategy;
    for (const HopItem& item : out.requests[p].items) {
      out.item_sizes[p].push_back(item.seeds.size());
    }
  }
  return out;
}

// Sends the requests (moved out) to their owners: a same-host peer's part mapped in-process
// (Peers::SamplingPart) is sampled here, the others are asked through `peers`, the local part is
// sampled while they answer. Counts the requests sent over the network in `profile`.
absl::StatusOr<HopAnswers> AskOwners(const LocalPart& local, Peers& peers,
                                     const MinibatchRequest& request, HopRequests& hop,
                                     BuildProfile& profile) {
  int64_t requests_sent = 0;  // on this thread: AskParts calls `remote` before it waits
  ASSIGN_OR_RETURN(
      HopAnswers results,
      (AskParts<std::vector<HopResult>>(
          hop.requests, hop.asked, local.part_index(),
          [&](int p, OneHopRequest r, Peers::Callback<std::vector<HopResult>> done) {
            if (const LocalPart* mapped = peers.SamplingPart(p)) {
              done(mapped->SampleOneHop(r, request.cancelled));  // a same-host peer's part
              return;
            }
            ++requests_sent;
            peers.SampleOneHop(p, std::move(r), std::move(done));
          },
          [&](const OneHopRequest& r) { return local.SampleOneHop(r, request.cancelled); })));
  profile.peer_requests += requests_sent;
  profile.peer_rounds += requests_sent > 0 ? 1 : 0;
  return results;
}

// Internal unless every answer has one result per item, one count per seed, and counts that
// add up to its neighbours.
absl::StatusOr<NeighbourOffsets> OffsetsOf(const HopAnswers& results,
                                           const std::vector<std::vector<size_t>>& item_sizes) {
  const int k = static_cast<int>(results.size());
  NeighbourOffsets offsets(k);
  for (int p = 0; p < k; ++p) {
    if (!results[p].has_value()) continue;
    if (results[p]->size() != item_sizes[p].size()) {
      return absl::InternalError(absl::StrCat("part ", p, " answered ", results[p]->size(),
                                              " items for ", item_sizes[p].size()));
    }
    offsets[p].resize(results[p]->size());
    for (size_t i = 0; i < results[p]->size(); ++i) {
      const HopResult& r = (*results[p])[i];
      if (r.counts.size() != item_sizes[p][i]) {
        return absl::InternalError(absl::StrCat("part ", p, " answered a malformed hop result"));
      }
      std::vector<int64_t>& off = offsets[p][i];
      off.assign(r.counts.size() + 1, 0);
      for (size_t s = 0; s < r.counts.size(); ++s) off[s + 1] = off[s] + r.counts[s];
      if (off.back() != std::ssize(r.neighbors)) {
        return absl::InternalError(absl::StrCat("part ", p, " answered a malformed hop result"));
      }
    }
  }
  return offsets;
}

// Appends edge type e's sampled edges to `block` in frontier order, each frontier node's
// neighbours in the order its owner answered them, relabelling new source nodes into their
// type's index; leaves out a link batch's supervision edges. Internal for a neighbour id
// outside its node type.
absl::Status MergeEdgeType(const LocalPart& local, const MinibatchRequest& request, size_t e,
                           absl::Span<const Slot> slots, const HopAnswers& results,
                           const NeighbourOffsets& offsets, const LinkSeeds* link,
                           std::vector<NodeIndex>& types, EdgeBlock& block) {
  const EdgeType& etype = local.edge_types()[e];
  const int64_t before = std::ssize(block.src);
  NodeIndex& src = types[etype.src];
  const NodeIndex& dst = types[etype.dst];
  const int64_t num_src = local.node_types()[etype.src].book->num_nodes();
  int64_t edges_of_type = 0;
  for (const Slot& slot : slots) {
    const std::vector<int64_t>& off = offsets[slot.part][slot.item];
    edges_of_type += off[slot.pos + 1] - off[slot.pos];
  }
  block.src.reserve(block.src.size() + static_cast<size_t>(edges_of_type));
  block.dst.reserve(block.dst.size() + static_cast<size_t>(edges_of_type));
  for (size_t s = 0; s < slots.size(); ++s) {
    if (s % kCancelCheckEvery == kCancelCheckEvery - 1) RETURN_IF_ERROR(CheckCancelled(request));
    const Slot& slot = slots[s];
    const HopResult& r = (*results[slot.part])[slot.item];
    const std::vector<int64_t>& off = offsets[slot.part][slot.item];
    const int64_t j = dst.frontier_begin + static_cast<int64_t>(s);
    const int64_t tree = dst.TreeOf(j);
    const int64_t first = off[slot.pos];
    const int64_t last = off[slot.pos + 1];
    for (int64_t n = first; n < last; ++n) {
      const int64_t id = r.neighbors[n];
      if (id < 0 || id >= num_src) {
        return absl::InternalError(absl::StrCat("part ", slot.part, " answered neighbour ", id,
                                                " outside the ", num_src, " '",
                                                local.node_types()[etype.src].name, "' nodes"));
      }
      if (n + kPrefetchAhead < std::ssize(r.neighbors)) {
        src.Prefetch(r.neighbors[n + kPrefetchAhead]);
      }
      if (link != nullptr && link->Excluded(e, id, dst.ids[j])) continue;
      block.src.push_back(src.Add(tree, id));
      block.dst.push_back(j);
    }
  }
  block.num_sampled_edges.push_back(std::ssize(block.src) - before);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunHop(const LocalPart& local, Peers& peers, const MinibatchRequest& request,
                    const std::vector<int64_t>& seed_times, int hop, std::vector<NodeIndex>& types,
                    std::vector<EdgeBlock>& edges, const LinkSeeds* link, BuildProfile& profile) {
  HopRequests requests = SplitFrontier(local, request, seed_times, hop, types);
  ASSIGN_OR_RETURN(const HopAnswers results, AskOwners(local, peers, request, requests, profile));
  ASSIGN_OR_RETURN(const NeighbourOffsets offsets, OffsetsOf(results, requests.item_sizes));
  for (size_t e = 0; e < local.edge_types().size(); ++e) {
    RETURN_IF_ERROR(MergeEdgeType(local, request, e, requests.slots[e], results, offsets, link,
                                  types, edges[e]));
  }
  for (size_t t = 0; t < types.size(); ++t) types[t].frontier_begin = requests.frontier_end[t];
  return absl::OkStatus();
}

}  // namespace graphshard::engine::internal
