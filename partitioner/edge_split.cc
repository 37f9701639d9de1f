#include "partitioner/edge_split.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/rng.h"
#include "common/status_macros.h"

namespace graphshard::partitioner {
namespace {

enum SplitOf : uint8_t { kNone = 0, kTrain = 1, kVal = 2, kTest = 3 };

using Key = std::pair<int64_t, int64_t>;

// The candidate pair an edge belongs to: (min, max) within one node type, (src, dst) otherwise.
Key KeyOf(int64_t s, int64_t d, bool same_type) {
  return same_type && d < s ? Key{d, s} : Key{s, d};
}

// The distinct candidate pairs of `t`, ascending, and for each its first edge (orientation).
struct Candidates {
  std::vector<Key> keys;
  std::vector<int64_t> first_edge;
};

Candidates FindCandidates(const EdgeTypeData& t, bool same_type) {
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(t.num_edges()));
  for (int64_t e = 0; e < t.num_edges(); ++e) {
    if (same_type && t.src_ids[e] == t.dst_ids[e]) continue;  // self loops: no candidate
    order.push_back(e);
  }
  auto key = [&](int64_t e) { return KeyOf(t.src_ids[e], t.dst_ids[e], same_type); };
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const Key ka = key(a), kb = key(b);
    return ka != kb ? ka < kb : a < b;
  });
  Candidates c;
  for (size_t i = 0; i < order.size(); ++i) {
    const Key k = key(order[i]);
    if (!c.keys.empty() && c.keys.back() == k) continue;
    c.keys.push_back(k);
    c.first_edge.push_back(order[i]);
  }
  return c;
}

// The split of the candidate `k` (kNone if `k` is no candidate).
SplitOf Lookup(const Candidates& c, const std::vector<SplitOf>& split, Key k) {
  auto it = std::lower_bound(c.keys.begin(), c.keys.end(), k);
  if (it == c.keys.end() || *it != k) return kNone;
  return split[static_cast<size_t>(it - c.keys.begin())];
}

// Keeps the edges of `t` for which `drop(s, d)` is false; edge ids become positions.
template <typename Drop>
void RemoveEdges(EdgeTypeData& t, Drop drop) {
  std::vector<int64_t> src, dst, time;
  src.reserve(static_cast<size_t>(t.num_edges()));
  dst.reserve(static_cast<size_t>(t.num_edges()));
  const bool timed = !t.time.empty();
  for (int64_t e = 0; e < t.num_edges(); ++e) {
    if (drop(t.src_ids[e], t.dst_ids[e])) continue;
    src.push_back(t.src_ids[e]);
    dst.push_back(t.dst_ids[e]);
    if (timed) time.push_back(t.time[e]);  // times stay aligned with the kept edges
  }
  t.src_ids = Array<int64_t>::Owned(std::move(src));
  t.dst_ids = Array<int64_t>::Owned(std::move(dst));
  if (timed) t.time = Array<int64_t>::Owned(std::move(time));
}

absl::StatusOr<int> FindEdgeType(const Graph& g, const std::string& name) {
  std::vector<std::string> names;
  for (const EdgeTypeData& t : g.edge_types) names.push_back(t.Name());
  if (name.empty()) {
    if (g.edge_types.size() == 1) return 0;
    return absl::InvalidArgumentError(absl::StrCat(
        "--edge-split on a graph with ", g.edge_types.size(),
        " edge types needs --target-edge-type, one of: ", absl::StrJoin(names, ", ")));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("--target-edge-type ", name,
                                                 ": the graph has no such edge type (it has ",
                                                 absl::StrJoin(names, ", "), ")"));
}

// The reverse relation of edge type `te`: `name`, or by default "<dst>__rev_<rel>__<src>" if the
// graph has it; -1 for none.
absl::StatusOr<int> FindReverse(const Graph& g, int te, const std::string& name) {
  const EdgeTypeData& t = g.edge_types[static_cast<size_t>(te)];
  const std::string want = name.empty() ? absl::StrCat(t.dst, "__rev_", t.rel, "__", t.src) : name;
  for (size_t i = 0; i < g.edge_types.size(); ++i) {
    const EdgeTypeData& r = g.edge_types[i];
    if (r.Name() != want || static_cast<int>(i) == te) continue;
    if (r.src != t.dst || r.dst != t.src) {
      return absl::InvalidArgumentError(absl::StrCat("--reverse-edge-type ", want, " does not go ",
                                                     t.dst, " -> ", t.src));
    }
    return static_cast<int>(i);
  }
  if (name.empty()) return -1;
  return absl::InvalidArgumentError(
      absl::StrCat("--reverse-edge-type ", name, ": the graph has no such edge type"));
}

}  // namespace

absl::Status ParseEdgeSplitOrder(absl::string_view text, EdgeSplitOrder& out) {
  if (text == "auto") {
    out = EdgeSplitOrder::kAuto;
  } else if (text == "random") {
    out = EdgeSplitOrder::kRandom;
  } else if (text == "time") {
    out = EdgeSplitOrder::kTime;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--edge-split-order \"", text, "\": expected auto, random or time"));
  }
  return absl::OkStatus();
}

absl::Status ParseEdgeSplit(absl::string_view text, EdgeSplitOptions& out) {
  std::vector<std::string> parts = absl::StrSplit(text, ',');
  double v[3];
  bool ok = parts.size() == 3;
  for (size_t i = 0; ok && i < 3; ++i) {
    ok = absl::SimpleAtod(parts[i], &v[i]) && v[i] >= 0 && v[i] <= 1;
  }
  if (!ok || v[0] + v[1] + v[2] > 1 + 1e-9) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--edge-split \"", text,
        "\": expected three fractions train,val,test in [0, 1] adding up to at most 1"));
  }
  out.train = v[0];
  out.val = v[1];
  out.test = v[2];
  return absl::OkStatus();
}

absl::Status SplitEdges(Graph& g, const EdgeSplitOptions& o) {
  RETURN_IF_ERROR(ValidateGraph(g));
  if (o.train < 0 || o.val < 0 || o.test < 0 || o.train + o.val + o.test > 1 + 1e-9) {
    return absl::InvalidArgumentError("edge split fractions must be >= 0 and add up to <= 1");
  }
  ASSIGN_OR_RETURN(const int te, FindEdgeType(g, o.edge_type));
  EdgeTypeData& t = g.edge_types[static_cast<size_t>(te)];
  if (!t.splits.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("edge type ", t.Name(), " already has edge splits (from the input)"));
  }
  ASSIGN_OR_RETURN(const int reverse, FindReverse(g, te, o.reverse_edge_type));
  const bool same_type = t.src == t.dst;
  const Candidates c = FindCandidates(t, same_type);
  const auto n = static_cast<int64_t>(c.keys.size());
  if (n == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--edge-split: edge type ", t.Name(), " has no edge to split"));
  }
  const bool timed = !t.time.empty();
  if (o.order == EdgeSplitOrder::kTime && !timed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--edge-split-order time: edge type ", t.Name(),
        " has no edge times (give the input edge_time.npy, or edge_time__", t.Name(), ".npy)"));
  }
  const bool by_time =
      o.order == EdgeSplitOrder::kTime || (o.order == EdgeSplitOrder::kAuto && timed);
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  auto time_of = [&](int64_t p) { return t.time[c.first_edge[static_cast<size_t>(p)]]; };
  if (by_time) {
    // Chronological (a temporal split): ordered by (time, src, dst); candidates are ascending
    // by key already, so a stable sort by time breaks ties by key.
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return time_of(a) < time_of(b); });
  } else {
    // A seeded shuffle of the candidates.
    common::SplitMix64 rng(common::MixSeed(o.seed, 0x6c696e6b73706c74ULL));  // "linksplt"
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.Below(i)]);
  }
  auto count = [n](double f) { return static_cast<int64_t>(std::llround(f * static_cast<double>(n))); };
  const int64_t n_val = std::min(n, count(o.val));
  const int64_t n_test = std::min(n - n_val, count(o.test));
  // Fractions adding up to 1 leave no candidate out, whatever the rounding.
  const bool all = o.train + o.val + o.test >= 1 - 1e-9;
  const int64_t n_train = all ? n - n_val - n_test : std::min(n - n_val - n_test, count(o.train));
  const int64_t n_none = n - n_val - n_test - n_train;
  // The cut, in perm order: shuffled, val, test, train (then message passing only); by time,
  // message passing only (the earliest), train, val, test (the latest).
  const std::vector<std::pair<SplitOf, int64_t>> segments =
      by_time ? std::vector<std::pair<SplitOf, int64_t>>{{kNone, n_none}, {kTrain, n_train},
                                                         {kVal, n_val}, {kTest, n_test}}
              : std::vector<std::pair<SplitOf, int64_t>>{{kVal, n_val}, {kTest, n_test},
                                                         {kTrain, n_train}, {kNone, n_none}};
  std::vector<SplitOf> split(static_cast<size_t>(n), kNone);
  std::map<std::string, EdgeSplitData> out;
  int64_t begin = 0;
  for (const auto& [which, size] : segments) {
    const int64_t end = begin + size;
    if (which == kNone) {
      begin = end;
      continue;
    }
    std::vector<int64_t> src, dst, time;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t p = perm[static_cast<size_t>(i)];
      split[static_cast<size_t>(p)] = which;
      src.push_back(t.src_ids[c.first_edge[static_cast<size_t>(p)]]);
      dst.push_back(t.dst_ids[c.first_edge[static_cast<size_t>(p)]]);
      if (timed) time.push_back(time_of(p));
    }
    const char* name = which == kVal ? "val" : which == kTest ? "test" : "train";
    out[name] = {Array<int64_t>::Owned(std::move(src)), Array<int64_t>::Owned(std::move(dst)),
                 timed ? Array<int64_t>::Owned(std::move(time)) : Array<int64_t>()};
    begin = end;
  }
  auto held_out = [&](SplitOf s) { return s == kVal || s == kTest; };
  RemoveEdges(t, [&](int64_t s, int64_t d) {
    return !(same_type && s == d) && held_out(Lookup(c, split, KeyOf(s, d, same_type)));
  });
  t.splits = std::move(out);
  // The reverse relation: its reversed held-out edges go too.
  if (reverse >= 0) {
    EdgeTypeData& r = g.edge_types[static_cast<size_t>(reverse)];
    t.split_reverse = r.Name();
    RemoveEdges(r, [&](int64_t s, int64_t d) {
      return held_out(Lookup(c, split, KeyOf(d, s, same_type)));
    });
  }
  return absl::OkStatus();
}

}  // namespace graphshard::partitioner
