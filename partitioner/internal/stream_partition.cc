#include "partitioner/internal/stream_partition.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "partitioner/internal/edge_scan.h"

namespace graphshard::partitioner::internal {
namespace {

// The caps' slack: 1 + eps = 21/20, in integers so that the caps are exact.
constexpr int64_t kSlackNum = 21;
constexpr int64_t kSlackDen = 20;
// A pass that moves at most nodes / kSettled nodes ends the passes: the cut no longer improves.
constexpr int64_t kSettled = 1000;
// One node in kStayOneIn, drawn afresh every pass, keeps its part (when the part still has room
// in its class). Every node moves on counts taken before the pass, so without this neighbours
// swap parts in lockstep: a community that two parts share flips between them forever (16
// parts of the 200 k-node products graph: 87 k of 200 k nodes still moving after 40 passes,
// cut 56.6%, walked in id order; with it 45.8% after 32 passes, METIS' 46.0%;
// partitioner/README.md, "Methods").
constexpr uint64_t kStayOneIn = 4;
constexpr uint64_t kStayStream = 0x73746179;   // "stay"
constexpr uint64_t kOrderStream = 0x6f726472;  // "ordr"

// Adds one to a count, stopping at the type's maximum: a saturated count is min(true count,
// 2^32 - 1) whatever the order of the adds, so the result stays order-independent even for a
// node with 2^32 neighbours in one part (possible only past 2^32 edges).
inline void Bump(uint32_t& count) {
  std::atomic_ref<uint32_t> c(count);
  uint32_t old = c.load(std::memory_order_relaxed);
  while (old != std::numeric_limits<uint32_t>::max() &&
         !c.compare_exchange_weak(old, old + 1, std::memory_order_relaxed)) {
  }
}

struct Layout {
  int num_parts = 0;
  std::vector<int64_t> offset;  // [types + 1]: first flat id of each type
  std::vector<uint64_t> train;  // [(nodes + 63) / 64]: bit v set = node v in its type's "train"
  std::vector<int64_t> cap;     // [classes]: nodes of class c = 2 x type + train per part
  int64_t capacity = 0;         // sum of cap: the most nodes a part can end with

  bool InTrain(int64_t v) const { return (train[static_cast<size_t>(v) >> 6] >> (v & 63)) & 1; }
  // The node type of flat id v.
  size_t TypeOf(int64_t v) const {
    return static_cast<size_t>(std::upper_bound(offset.begin(), offset.end(), v) -
                               offset.begin() - 1);
  }
};

absl::StatusOr<Layout> MakeLayout(const Graph& g, int num_parts) {
  Layout l;
  l.num_parts = num_parts;
  l.offset.push_back(0);
  for (const NodeTypeData& t : g.node_types) l.offset.push_back(l.offset.back() + t.num_nodes);
  const int64_t n = l.offset.back();
  if (n > std::numeric_limits<int64_t>::max() / num_parts) {
    return absl::InvalidArgumentError(absl::StrCat("stream partition: ", n, " nodes x ", num_parts,
                                                   " parts overflows the counts"));
  }
  l.train.assign(static_cast<size_t>(n + 63) / 64, 0);
  std::vector<int64_t> class_size(2 * g.node_types.size(), 0);
  for (size_t t = 0; t < g.node_types.size(); ++t) {
    const NodeTypeData& nt = g.node_types[t];
    int64_t in_train = 0;
    if (auto it = nt.splits.find("train"); it != nt.splits.end()) {
      for (int64_t id : it->second.span()) {
        const int64_t v = l.offset[t] + id;
        l.train[static_cast<size_t>(v) >> 6] |= uint64_t{1} << (v & 63);
      }
      in_train = it->second.size();
    }
    class_size[2 * t] = nt.num_nodes - in_train;
    class_size[2 * t + 1] = in_train;
  }
  for (int64_t size : class_size) {
    // ceil(21 x size / (20 x K)), written to stay in int64 for any size below 2^63 / 21.
    const int64_t den = kSlackDen * num_parts;
    const int64_t cap = size / den * kSlackNum + (size % den * kSlackNum + den - 1) / den;
    l.cap.push_back(cap);
    l.capacity += cap;
  }
  return l;
}

// Step 1: count[v * K + p] = neighbours of v in part p under `parts`.
void CountNeighbours(const Graph& g, const Layout& l, const std::vector<std::vector<int>>& parts,
                     int threads, Progress& progress, std::vector<uint32_t>& count) {
  std::fill(count.begin(), count.end(), 0);
  const int64_t k = l.num_parts;
  for (const EdgeTypeData& t : g.edge_types) {
    const int si = g.NodeTypeIndex(t.src), di = g.NodeTypeIndex(t.dst);
    const int64_t os = l.offset[si], od = l.offset[di];
    const std::vector<int>& src_part = parts[si];
    const std::vector<int>& dst_part = parts[di];
    const bool one_type = si == di;
    // Every edge bumps two counts at random places, and a locked add waits for its cache line:
    // the parts are fetched kPartsAhead edges ahead and the counts they select kCountsAhead
    // ahead, so the adds find their lines in cache.
    constexpr int64_t kPartsAhead = 32, kCountsAhead = 16;
    ParallelScanEdgeChunks(t, &progress, threads, [&](int64_t b, int64_t end) {
      for (int64_t e = b; e < end; ++e) {
        if (e + kPartsAhead < end) {
          __builtin_prefetch(&dst_part[static_cast<size_t>(t.dst_ids[e + kPartsAhead])]);
          __builtin_prefetch(&src_part[static_cast<size_t>(t.src_ids[e + kPartsAhead])]);
        }
        if (e + kCountsAhead < end) {
          const int64_t ua = t.src_ids[e + kCountsAhead], va = t.dst_ids[e + kCountsAhead];
          __builtin_prefetch(&count[static_cast<size_t>((os + ua) * k + dst_part[va])], 1);
          __builtin_prefetch(&count[static_cast<size_t>((od + va) * k + src_part[ua])], 1);
        }
        const int64_t u = t.src_ids[e], v = t.dst_ids[e];
        if (one_type && u == v) continue;
        Bump(count[static_cast<size_t>((os + u) * k + dst_part[v])]);
        Bump(count[static_cast<size_t>((od + v) * k + src_part[u])]);
      }
    });
  }
}

struct PassStats {
  int64_t endpoints = 0;      // sum of all counts: twice the edges, self loops aside
  int64_t cut_endpoints = 0;  // of those, neighbours in another part than the node
  int64_t moved = 0;          // nodes whose part changed
};

// The walk's order: flat ids start, start + stride, start + 2 x stride, ... (mod n), a
// permutation of [0, n) since gcd(stride, n) = 1, and no memory. A stride near n / golden ratio
// interleaves every id range with all the others, so communities stored as id ranges (crawl or
// class order) do not meet the loads one after another: walked in id order, the last ranges
// found the parts full every pass and were split (1 M nodes, 8 communities of 131 k ids each,
// average degree 64: stuck at a 64% cut; 15.05% in this order, as with the ids shuffled). The
// same order every pass: a new start each pass still moved 3% of the nodes at pass 32 on 16
// parts of the papers graph, while one order settles (after 18-31 passes, by the start).
struct WalkOrder {
  int64_t start = 0;
  int64_t stride = 1;
};

WalkOrder MakeWalkOrder(int64_t n, uint64_t seed) {
  if (n <= 1) return {};
  WalkOrder o;
  o.start = static_cast<int64_t>(common::MixSeed(seed, kOrderStream) % static_cast<uint64_t>(n));
  o.stride = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * 0.6180339887));
  while (std::gcd(o.stride, n) != 1) ++o.stride;  // stops by n - 1 at the latest
  return o;
}

// Loads of the pass so far: nodes per part, and per (class, part).
struct Loads {
  std::vector<int64_t> nodes;
  std::vector<int64_t> by_class;  // [class * K + part]
};

// The LDG choice for one node of class c whose neighbours per part are cnt[0, K).
int ChoosePart(const Layout& l, const uint32_t* cnt, size_t c, const Loads& loads) {
  const int k = l.num_parts;
  const int64_t* cl = &loads.by_class[c * k];
  const double capacity = static_cast<double>(l.capacity);
  int best = -1;
  double best_score = 0;
  for (int p = 0; p < k; ++p) {
    if (cl[p] >= l.cap[c]) continue;
    // count x (capacity - load) orders the parts as count x (1 - load / capacity) does; both
    // factors are integers, so the product is the same on every machine.
    const double score =
        static_cast<double>(cnt[p]) * (capacity - static_cast<double>(loads.nodes[p]));
    if (best < 0 || score > best_score ||
        (score == best_score && loads.nodes[p] < loads.nodes[best])) {
      best = p;
      best_score = score;
    }
  }
  return best;  // the class caps sum to at least the class size: some part has room
}

// Step 2: the sequential LDG walk; rewrites `parts` in place (the counts were taken before).
PassStats Assign(const Layout& l, const std::vector<uint32_t>& count, uint64_t seed, int pass,
                 Progress& progress, std::vector<std::vector<int>>& parts) {
  const int k = l.num_parts;
  const int64_t n = l.offset.back();
  Loads loads{std::vector<int64_t>(static_cast<size_t>(k), 0),
              std::vector<int64_t>(l.cap.size() * static_cast<size_t>(k), 0)};
  const WalkOrder order = MakeWalkOrder(n, seed);
  const uint64_t pass_seed = common::MixSeed(seed, kStayStream + static_cast<uint64_t>(pass));
  PassStats s;
  // The walk reads each node's counts, part and train bit at effectively random places (the
  // strided order): the node kWalkAhead steps ahead is fetched while this one is chosen.
  // Memory latency bounded the walk: 223 ns a node at papers scale 0.25 before, 72 ns at scale
  // 1 since (tests/bench/RESULTS.md, "The partition's random reads fetched ahead").
  constexpr int64_t kWalkAhead = 16;
  auto step = [&](int64_t v) {
    v += order.stride;  // stride < n: one subtraction is the modulo
    return v >= n ? v - n : v;
  };
  int64_t ahead = order.start;
  for (int64_t i = 0; i < std::min(n, kWalkAhead); ++i) ahead = step(ahead);
  int64_t flat = order.start;
  for (int64_t i = 0; i < n; ++i) {
    if (i + kWalkAhead < n) {
      const size_t ta = l.TypeOf(ahead);
      __builtin_prefetch(&count[static_cast<size_t>(ahead * k)]);
      __builtin_prefetch(&parts[ta][static_cast<size_t>(ahead - l.offset[ta])], 1);
      __builtin_prefetch(&l.train[static_cast<size_t>(ahead) >> 6]);
      ahead = step(ahead);
    }
    const size_t t = l.TypeOf(flat);
    int& part = parts[t][flat - l.offset[t]];
    const size_t c = 2 * t + (l.InTrain(flat) ? 1 : 0);
    const uint32_t* cnt = &count[static_cast<size_t>(flat * k)];
    for (int p = 0; p < k; ++p) {
      s.endpoints += cnt[p];
      if (p != part) s.cut_endpoints += cnt[p];
    }
    const bool stays = loads.by_class[c * k + part] < l.cap[c] &&
                       common::MixSeed(pass_seed, static_cast<uint64_t>(flat)) % kStayOneIn == 0;
    const int best = stays ? part : ChoosePart(l, cnt, c, loads);
    s.moved += part != best ? 1 : 0;
    part = best;
    ++loads.nodes[best];
    ++loads.by_class[c * k + best];
    if ((i + 1) % (int64_t{1} << 16) == 0 || i + 1 == n) progress.Set(i + 1);
    flat = step(flat);
  }
  return s;
}

absl::Status CheckInput(const Graph& g, const StreamOptions& o,
                        const std::vector<std::vector<int>>& parts) {
  if (o.num_parts < 2 || o.passes < 1 || o.threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat("stream partition: num_parts ", o.num_parts,
                                                   " (>= 2), passes ", o.passes,
                                                   " (>= 1), threads ", o.threads, " (>= 1)"));
  }
  if (parts.size() != g.node_types.size()) {
    return absl::InvalidArgumentError(absl::StrCat("stream partition: parts of ", parts.size(),
                                                   " node types for ", g.node_types.size()));
  }
  for (size_t t = 0; t < parts.size(); ++t) {
    if (static_cast<int64_t>(parts[t].size()) != g.node_types[t].num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat("stream partition: ", parts[t].size(),
                                                     " parts for node type ", g.node_types[t].name,
                                                     " of ", g.node_types[t].num_nodes, " nodes"));
    }
    for (int p : parts[t]) {
      if (p < 0 || p >= o.num_parts) {
        return absl::InvalidArgumentError(
            absl::StrCat("stream partition: part ", p, " of a ", g.node_types[t].name, " node"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status StreamPartition(const Graph& g, const StreamOptions& o,
                             std::vector<std::vector<int>>& parts) {
  RETURN_IF_ERROR(CheckInput(g, o, parts));
  ASSIGN_OR_RETURN(Layout l, MakeLayout(g, o.num_parts));
  std::vector<uint32_t> count(static_cast<size_t>(l.offset.back() * o.num_parts));
  for (int pass = 1; pass <= o.passes; ++pass) {
    const std::string name = absl::StrCat("stream: pass ", pass, "/", o.passes);
    {
      Progress progress(o.progress, absl::StrCat(name, " neighbour counts"), g.TotalEdges());
      CountNeighbours(g, l, parts, o.threads, progress, count);
      progress.Finish();
    }
    Progress progress(o.progress, absl::StrCat(name, " assignment"), l.offset.back());
    const PassStats s = Assign(l, count, o.seed, pass, progress, parts);
    progress.Finish();
    const bool settled = s.moved <= l.offset.back() / kSettled;
    if (std::ostream* log = o.progress.log; log != nullptr) {
      // The cut is that of the assignment the pass started from (the one the counts saw).
      *log << absl::StrFormat("%s%s: edge cut before it %.2f%%, %d nodes moved%s\n",
                              kProgressPrefix, name,
                              s.endpoints > 0 ? 100.0 * s.cut_endpoints / s.endpoints : 0.0,
                              s.moved, settled ? " (settled: last pass)" : "")
           << std::flush;
    }
    if (settled) break;
  }
  return absl::OkStatus();
}

}  // namespace graphshard::partitioner::internal
