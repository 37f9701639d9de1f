#include "server/engine/minibatch_builder.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "common/rng.h"
#include "common/status_macros.h"

namespace graphshard::engine {
namespace {

absl::Status ValidateRequest(const LocalPart& local, const MinibatchRequest& r) {
  const Limits& lim = local.limits();
  if (r.seeds.empty()) return absl::InvalidArgumentError("empty batch: no seeds");
  if (std::ssize(r.seeds) > lim.max_batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("batch of ", r.seeds.size(),
                                                   " seeds exceeds the limit ",
                                                   lim.max_batch_size));
  }
  if (r.fanouts.empty() || std::ssize(r.fanouts) > lim.max_hops) {
    return absl::InvalidArgumentError(absl::StrCat(r.fanouts.size(), " hops: need 1..",
                                                   lim.max_hops, " fanouts"));
  }
  for (size_t h = 0; h < r.fanouts.size(); ++h) {
    if (r.fanouts[h] < -1 || r.fanouts[h] > lim.max_fanout) {
      return absl::InvalidArgumentError(absl::StrCat("fanouts[", h, "] = ", r.fanouts[h],
                                                     " is outside -1..", lim.max_fanout));
    }
  }
  return local.CheckOwned(r.seeds, "seeds");
}

// Runs `call(part, ids_of_part, slot)` for every part that owns some of `ids`, remote parts
// first (asynchronous) and the local part in-process meanwhile, and waits for all. Returns
// per-part results and, for each id, (part, index within that part's request).
template <typename T>
struct Scatter {
  std::vector<std::vector<int64_t>> ids_by_part;
  std::vector<std::pair<int, int64_t>> where;  // per input id
  std::vector<std::optional<absl::StatusOr<T>>> results;
};

template <typename T, typename Remote, typename Local>
absl::StatusOr<Scatter<T>> AskOwners(const LocalPart& local, absl::Span<const int64_t> ids,
                                     Remote remote, Local local_call) {
  const common::PartitionBook& book = local.book();
  const int k = book.num_parts();
  Scatter<T> s;
  s.ids_by_part.resize(k);
  s.results.resize(k);
  s.where.reserve(ids.size());
  for (int64_t id : ids) {
    int p = book.Owner(id);
    if (p < 0) return absl::InternalError(absl::StrCat("sampled id ", id, " has no owner"));
    s.where.emplace_back(p, std::ssize(s.ids_by_part[p]));
    s.ids_by_part[p].push_back(id);
  }
  const int self = local.part_index();
  int remote_parts = 0;
  for (int p = 0; p < k; ++p) remote_parts += (p != self && !s.ids_by_part[p].empty());
  absl::BlockingCounter pending(remote_parts);
  for (int p = 0; p < k; ++p) {
    if (p == self || s.ids_by_part[p].empty()) continue;
    remote(p, s.ids_by_part[p], [&s, &pending, p](absl::StatusOr<T> r) {
      s.results[p] = std::move(r);  // each slot written by one callback only
      pending.DecrementCount();
    });
  }
  if (!s.ids_by_part[self].empty()) s.results[self] = local_call(s.ids_by_part[self]);
  pending.Wait();
  for (int p = 0; p < k; ++p) {
    if (s.results[p].has_value() && !s.results[p]->ok()) {
      const absl::Status& st = s.results[p]->status();
      return absl::Status(st.code(), absl::StrCat("part ", p, ": ", st.message()));
    }
  }
  return s;
}

}  // namespace

absl::StatusOr<Minibatch> BuildMinibatch(const LocalPart& local, Peers& peers,
                                         const MinibatchRequest& request) {
  RETURN_IF_ERROR(ValidateRequest(local, request));
  Minibatch out;
  out.batch_size = std::ssize(request.seeds);
  absl::flat_hash_map<int64_t, int64_t> local_index;
  local_index.reserve(request.seeds.size() * 4);
  for (int64_t id : request.seeds) {
    if (!local_index.emplace(id, std::ssize(out.node_ids)).second) {
      return absl::InvalidArgumentError(absl::StrCat("seed ", id, " appears twice in the batch"));
    }
    out.node_ids.push_back(id);
  }
  out.num_sampled_nodes.push_back(out.batch_size);

  int64_t frontier_begin = 0;
  for (size_t hop = 0; hop < request.fanouts.size(); ++hop) {
    const int64_t frontier_end = std::ssize(out.node_ids);
    // Copy: node_ids grows while this hop's results are merged.
    std::vector<int64_t> frontier(out.node_ids.begin() + frontier_begin, out.node_ids.end());
    OneHopRequest proto_req;
    proto_req.fanout = request.fanouts[hop];
    proto_req.replace = request.replace;
    proto_req.seed = common::MixSeed(request.seed, hop);
    ASSIGN_OR_RETURN(
        Scatter<OneHopResult> s,
        (AskOwners<OneHopResult>(
            local, frontier,
            [&](int p, const std::vector<int64_t>& ids, Peers::Callback<OneHopResult> done) {
              OneHopRequest r = proto_req;
              r.seeds = ids;
              peers.SampleOneHop(p, std::move(r), std::move(done));
            },
            [&](const std::vector<int64_t>& ids) {
              OneHopRequest r = proto_req;
              r.seeds = ids;
              return local.SampleOneHop(r);
            })));
    // Offsets of each requested seed's neighbours inside its part's result.
    std::vector<std::vector<int64_t>> offsets(s.results.size());
    for (size_t p = 0; p < s.results.size(); ++p) {
      if (!s.results[p].has_value()) continue;
      const OneHopResult& r = **s.results[p];
      if (r.counts.size() != s.ids_by_part[p].size()) {
        return absl::InternalError(absl::StrCat("part ", p, " answered ", r.counts.size(),
                                                " counts for ", s.ids_by_part[p].size(), " seeds"));
      }
      offsets[p].resize(r.counts.size() + 1);
      for (size_t i = 0; i < r.counts.size(); ++i) offsets[p][i + 1] = offsets[p][i] + r.counts[i];
    }
    int64_t edges_before = std::ssize(out.edge_src);
    for (size_t j = 0; j < frontier.size(); ++j) {
      auto [p, i] = s.where[j];
      const OneHopResult& r = **s.results[p];
      const int64_t dst = frontier_begin + static_cast<int64_t>(j);
      for (int64_t e = offsets[p][i]; e < offsets[p][i + 1]; ++e) {
        int64_t nbr = r.neighbors[e];
        auto [it, inserted] = local_index.emplace(nbr, std::ssize(out.node_ids));
        if (inserted) out.node_ids.push_back(nbr);
        out.edge_src.push_back(it->second);
        out.edge_dst.push_back(dst);
      }
    }
    out.num_sampled_nodes.push_back(std::ssize(out.node_ids) - frontier_end);
    out.num_sampled_edges.push_back(std::ssize(out.edge_src) - edges_before);
    frontier_begin = frontier_end;
  }

  ASSIGN_OR_RETURN(
      Scatter<FeatureRows> f,
      (AskOwners<FeatureRows>(
          local, out.node_ids,
          [&](int p, const std::vector<int64_t>& ids, Peers::Callback<FeatureRows> done) {
            peers.GatherFeatures(p, ids, std::move(done));
          },
          [&](const std::vector<int64_t>& ids) { return local.GatherFeatures(ids); })));
  const int64_t dim = local.nodes().feat_dim;
  out.feat_dim = dim;
  out.features.resize(out.node_ids.size() * static_cast<size_t>(dim));
  out.labels.resize(out.node_ids.size());
  for (size_t p = 0; p < f.results.size(); ++p) {
    if (!f.results[p].has_value()) continue;
    const FeatureRows& rows = **f.results[p];
    if (rows.feat_dim != dim || rows.labels.size() != f.ids_by_part[p].size() ||
        rows.features.size() != rows.labels.size() * static_cast<size_t>(dim)) {
      return absl::InternalError(absl::StrCat("part ", p, " answered a malformed feature block"));
    }
  }
  for (size_t j = 0; j < out.node_ids.size(); ++j) {
    auto [p, i] = f.where[j];
    const FeatureRows& rows = **f.results[p];
    std::copy_n(rows.features.data() + i * dim, dim, out.features.data() + j * dim);
    out.labels[j] = rows.labels[i];
  }
  return out;
}

}  // namespace graphshard::engine
