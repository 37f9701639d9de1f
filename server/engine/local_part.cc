#include "server/engine/local_part.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"

namespace graphshard::engine {
namespace {

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

LocalPart::LocalPart(std::unique_ptr<const common::PartitionPart> part, Limits limits)
    : part_(std::move(part)), limits_(limits) {}

absl::StatusOr<std::unique_ptr<LocalPart>> LocalPart::Create(
    std::unique_ptr<const common::PartitionPart> part, Limits limits) {
  const common::Manifest& m = part->manifest();
  if (m.node_types.size() != 1 || m.edge_types.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this server build serves homogeneous graphs (1 node type, 1 edge type); the partition "
        "has ",
        m.node_types.size(), " node types and ", m.edge_types.size(), " edge types"));
  }
  auto local = std::unique_ptr<LocalPart>(new LocalPart(std::move(part), limits));
  const std::string& ntype = m.node_types[0].name;
  local->book_ = local->part_->FindBook(ntype);
  local->nodes_ = local->part_->FindNodes(ntype);
  local->edges_ = local->part_->FindEdges(m.edge_types[0].Name());
  return local;
}

absl::Status LocalPart::CheckOwned(absl::Span<const int64_t> ids, absl::string_view what) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = ids[i];
    if (id >= nodes_->begin && id < nodes_->end) continue;
    int owner = book_->Owner(id);
    if (owner < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, "[", i, "] = ", id,
                                                     " is not a node id (graph has ",
                                                     book_->num_nodes(), " nodes)"));
    }
    return absl::InvalidArgumentError(absl::StrCat(what, "[", i, "] = ", id, " is owned by part ",
                                                   owner, ", not by this part ", part_index()));
  }
  return absl::OkStatus();
}

absl::StatusOr<OneHopResult> LocalPart::SampleOneHop(const OneHopRequest& request) const {
  if (request.fanout < -1 || request.fanout > limits_.max_fanout) {
    return absl::InvalidArgumentError(absl::StrCat("fanout ", request.fanout,
                                                   " is outside -1..", limits_.max_fanout));
  }
  if (std::ssize(request.seeds) > limits_.max_request_ids) {
    return absl::InvalidArgumentError(absl::StrCat(request.seeds.size(), " seeds exceed the limit ",
                                                   limits_.max_request_ids));
  }
  if (absl::Status s = CheckOwned(request.seeds, "seeds"); !s.ok()) return s;

  OneHopResult result;
  result.counts.reserve(request.seeds.size());
  std::vector<int64_t> picks;
  for (int64_t id : request.seeds) {
    absl::Span<const int64_t> nbrs = edges_->csc.InNeighbors(id - nodes_->begin);
    const int64_t deg = std::ssize(nbrs);
    const int64_t k = request.fanout;
    if (k < 0 || (!request.replace && deg <= k)) {
      result.neighbors.insert(result.neighbors.end(), nbrs.begin(), nbrs.end());
      result.counts.push_back(deg);
      continue;
    }
    common::SplitMix64 rng(common::MixSeed(request.seed, static_cast<uint64_t>(id)));
    picks.clear();
    if (request.replace) {
      for (int64_t j = 0; deg > 0 && j < k; ++j) {
        picks.push_back(static_cast<int64_t>(rng.Below(static_cast<uint64_t>(deg))));
      }
    } else {
      SampleWithoutReplacement(deg, k, rng, picks);
    }
    for (int64_t p : picks) result.neighbors.push_back(nbrs[p]);
    result.counts.push_back(std::ssize(picks));
  }
  return result;
}

absl::StatusOr<FeatureRows> LocalPart::GatherFeatures(absl::Span<const int64_t> ids) const {
  if (std::ssize(ids) > limits_.max_request_ids) {
    return absl::InvalidArgumentError(absl::StrCat(ids.size(), " ids exceed the limit ",
                                                   limits_.max_request_ids));
  }
  if (absl::Status s = CheckOwned(ids, "ids"); !s.ok()) return s;
  FeatureRows rows;
  const int64_t f = nodes_->feat_dim;
  rows.feat_dim = f;
  rows.features.resize(ids.size() * static_cast<size_t>(f));
  rows.labels.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t row = ids[i] - nodes_->begin;
    std::copy_n(nodes_->features.data() + row * f, f, rows.features.data() + i * f);
    rows.labels[i] = nodes_->labels[row];
  }
  return rows;
}

}  // namespace graphshard::engine
