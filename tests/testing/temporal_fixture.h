#ifndef GRAPHSHARD_TESTS_TESTING_TEMPORAL_FIXTURE_H_
#define GRAPHSHARD_TESTS_TESTING_TEMPORAL_FIXTURE_H_

// Test-only: a homogeneous graph whose nodes and edges carry times, and the checks that a
// temporal minibatch respects them. Header-only.

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "common/rng.h"
#include "partitioner/graph.h"

namespace graphshard::testing {

// `n` nodes, node v at a time drawn from [0, span); each node gets `in_degree` distinct
// random in-neighbours (no self loops), each edge at a time drawn from [0, span) (a small span
// gives many ties: strict and non-strict differ). 2 features per node, labels v % 3, every
// node in the train split. Deterministic in `seed`.
inline partitioner::Graph TemporalTestGraph(int64_t n, int in_degree, int64_t span,
                                            uint64_t seed) {
  common::SplitMix64 rng(seed);
  std::vector<int64_t> src, dst, edge_time, node_time, labels, train;
  std::vector<float> feat;
  for (int64_t v = 0; v < n; ++v) {
    node_time.push_back(static_cast<int64_t>(rng.Below(static_cast<uint64_t>(span))));
    labels.push_back(v % 3);
    train.push_back(v);
    feat.push_back(static_cast<float>(v % 7));
    feat.push_back(1.0f);
    std::vector<int64_t> picked;
    while (std::ssize(picked) < in_degree) {
      const int64_t u = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n)));
      if (u == v || std::find(picked.begin(), picked.end(), u) != picked.end()) continue;
      picked.push_back(u);
      src.push_back(u);
      dst.push_back(v);
      edge_time.push_back(static_cast<int64_t>(rng.Below(static_cast<uint64_t>(span))));
    }
  }
  partitioner::Graph g = partitioner::HomogeneousGraph(n, std::move(src), std::move(dst));
  partitioner::NodeTypeData& t = g.node_types[0];
  t.feat_dim = 2;
  t.features = partitioner::Array<float>::Owned(std::move(feat));
  t.labels = partitioner::Array<int64_t>::Owned(std::move(labels));
  t.num_classes = 3;
  t.splits["train"] = partitioner::Array<int64_t>::Owned(std::move(train));
  t.time = partitioner::Array<int64_t>::Owned(std::move(node_time));
  g.edge_types[0].time = partitioner::Array<int64_t>::Owned(std::move(edge_time));
  return g;
}

// (input src, input dst) -> the edge's time, for a graph whose edges are distinct pairs.
inline std::map<std::pair<int64_t, int64_t>, int64_t> EdgeTimeOf(const partitioner::Graph& g) {
  std::map<std::pair<int64_t, int64_t>, int64_t> out;
  const partitioner::EdgeTypeData& e = g.edge_types[0];
  for (int64_t i = 0; i < e.num_edges(); ++i) out[{e.src_ids[i], e.dst_ids[i]}] = e.time[i];
  return out;
}

// What a temporal batch's edges look like against the input's times: every sampled edge
// (src -> dst, relabelled) of the tree of seed s compared with seed s's time.
struct TemporalEdgeCheck {
  int64_t edges = 0;       // sampled edges checked
  int64_t later = 0;       // edge time > seed time (never allowed)
  int64_t same_time = 0;   // edge time == seed time (allowed unless strict)
  int64_t unknown = 0;     // (src, dst) is not an input edge
};

// `ids`, `tree`: the batch's node block (global ids, seed index of each node); `src`, `dst`:
// its edge block; `orig_of`: global id -> input id; `seed_time[s]`: the time of seed s.
inline TemporalEdgeCheck CheckTemporalEdges(
    const std::vector<int64_t>& ids, const std::vector<int64_t>& tree,
    const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
    const std::vector<int64_t>& orig_of, const std::vector<int64_t>& seed_time,
    const std::map<std::pair<int64_t, int64_t>, int64_t>& edge_time) {
  TemporalEdgeCheck c;
  for (size_t i = 0; i < src.size(); ++i) {
    ++c.edges;
    const int64_t s = tree[dst[i]];
    auto it = edge_time.find({orig_of[ids[src[i]]], orig_of[ids[dst[i]]]});
    if (it == edge_time.end()) {
      ++c.unknown;
      continue;
    }
    if (it->second > seed_time[s]) ++c.later;
    if (it->second == seed_time[s]) ++c.same_time;
  }
  return c;
}

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_TESTING_TEMPORAL_FIXTURE_H_
