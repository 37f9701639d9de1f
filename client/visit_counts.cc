#include "client/visit_counts.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace graphshard::client {

VisitCounts::VisitCounts(const ServerMetadata& metadata) {
  for (const NodeTypeInfo& t : metadata.node_types) {
    counts_.emplace_back(static_cast<size_t>(std::max<int64_t>(t.num_nodes, 0)), 0);
    visits_.push_back(0);
  }
}

void VisitCounts::Add(const MinibatchData& batch) {
  for (size_t b = 0; b < batch.nodes.size() && b < counts_.size(); ++b) {
    const NodeBlockData& block = batch.nodes[b];
    std::vector<uint32_t>& counts = counts_[b];
    const char* ids = block.ids.data;
    for (int64_t i = 0; i < block.num_nodes; ++i) {
      int64_t id = 0;
      std::memcpy(&id, ids + i * static_cast<int64_t>(sizeof id), sizeof id);
      if (id < 0 || id >= std::ssize(counts)) continue;  // DecodeMinibatch rejects these
      uint32_t& c = counts[static_cast<size_t>(id)];
      if (c != std::numeric_limits<uint32_t>::max()) ++c;
    }
    visits_[b] += block.num_nodes;
  }
}

std::vector<int64_t> VisitCounts::Hottest(int type, int64_t k) const {
  return Hottest(type, k, [](int64_t) { return true; });
}

std::vector<int64_t> VisitCounts::Hottest(int type, int64_t k,
                                          absl::FunctionRef<bool(int64_t)> eligible) const {
  const std::vector<uint32_t>& counts = counts_[static_cast<size_t>(type)];
  std::vector<int64_t> ids;
  ids.reserve(counts.size());
  for (int64_t id = 0; id < std::ssize(counts); ++id) {
    if (eligible(id)) ids.push_back(id);
  }
  const int64_t n = std::ssize(ids);
  k = std::clamp<int64_t>(k, 0, n);
  if (k < n) {
    const auto hotter = [&counts](int64_t a, int64_t b) {
      const uint32_t ca = counts[static_cast<size_t>(a)], cb = counts[static_cast<size_t>(b)];
      return ca != cb ? ca > cb : a < b;
    };
    std::nth_element(ids.begin(), ids.begin() + k, ids.end(), hotter);
    ids.resize(static_cast<size_t>(k));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

int64_t VisitCounts::VisitsTo(int type, const std::vector<int64_t>& ids) const {
  const std::vector<uint32_t>& counts = counts_[static_cast<size_t>(type)];
  int64_t total = 0;
  for (const int64_t id : ids) total += counts[static_cast<size_t>(id)];
  return total;
}

}  // namespace graphshard::client
