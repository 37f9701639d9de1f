#include "server/engine/types.h"

namespace graphshard::engine {

int64_t Minibatch::NumSampledEdges() const {
  int64_t n = 0;
  for (const EdgeBlock& e : edges) n += static_cast<int64_t>(e.src.size());
  return n;
}

int64_t Minibatch::PayloadBytes() const {
  int64_t bytes = 0;
  for (const NodeBlock& n : nodes) {
    bytes += static_cast<int64_t>((n.ids.size() + n.tree.size() + n.labels.size()) * 8 +
                                  n.FeatureData().size());
  }
  for (const EdgeBlock& e : edges) bytes += static_cast<int64_t>((e.src.size() + e.dst.size()) * 8);
  bytes += static_cast<int64_t>((link.src.size() + link.dst.size()) * 8 + link.label.size() * 4);
  return bytes;
}

}  // namespace graphshard::engine
