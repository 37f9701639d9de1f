#include "server/engine/any_part_rows.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/engine/internal/minibatch_steps.h"

namespace graphshard::engine {

absl::StatusOr<std::vector<FeatureBlock>> GatherRowsOfAnyPart(const LocalPart& local,
                                                              Peers& peers,
                                                              absl::Span<const TypedIds> items,
                                                              FeatureDtype dtype,
                                                              const CancelFn& cancelled) {
  // One node block per node type (the gather's layout), holding its items' ids back to back.
  const std::vector<NodeType>& types = local.node_types();
  Minibatch batch;
  batch.feature_dtype = dtype;
  batch.nodes.resize(types.size());
  for (size_t t = 0; t < types.size(); ++t) {
    batch.nodes[t].node_type = types[t].name;
    batch.nodes[t].feat_dim = types[t].shard != nullptr ? types[t].shard->feat_dim : 0;
  }
  struct Place {
    int type;
    size_t begin;  // in the type's block
  };
  std::vector<Place> places;
  places.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const int t = local.NodeTypeIndex(items[i].node_type);
    if (t < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("item ", i, ": unknown node type '", items[i].node_type, "'"));
    }
    const int64_t n = types[static_cast<size_t>(t)].book->num_nodes();
    for (int64_t id : items[i].ids) {
      if (id < 0 || id >= n) {
        return absl::InvalidArgumentError(absl::StrCat("item ", i, ": '", items[i].node_type,
                                                       "' id ", id, " is outside [0, ", n, ")"));
      }
    }
    std::vector<int64_t>& ids = batch.nodes[static_cast<size_t>(t)].ids;
    places.push_back({t, ids.size()});
    ids.insert(ids.end(), items[i].ids.begin(), items[i].ids.end());
  }
  MinibatchRequest request;
  request.sampling.feature_dtype = dtype;
  request.cancelled = cancelled;
  RETURN_IF_ERROR(internal::GatherAll(local, peers, request, batch, batch.profile));

  const size_t elem = static_cast<size_t>(common::FeatureBytes(dtype));
  std::vector<int> items_of_type(types.size(), 0);
  for (const Place& p : places) ++items_of_type[static_cast<size_t>(p.type)];
  std::vector<FeatureBlock> out(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    NodeBlock& block = batch.nodes[static_cast<size_t>(places[i].type)];
    FeatureBlock& b = out[i];
    b.feat_dim = block.feat_dim;
    if (items_of_type[static_cast<size_t>(places[i].type)] == 1) {  // the whole block: moved
      b.features = std::move(block.features);
      b.labels = std::move(block.labels);
      continue;
    }
    const size_t row_bytes = static_cast<size_t>(block.feat_dim) * elem;
    const size_t begin = places[i].begin, n = items[i].ids.size();
    const auto rows = block.features.begin() + static_cast<std::ptrdiff_t>(begin * row_bytes);
    b.features.assign(rows, rows + static_cast<std::ptrdiff_t>(n * row_bytes));
    b.labels.assign(block.labels.begin() + static_cast<std::ptrdiff_t>(begin),
                    block.labels.begin() + static_cast<std::ptrdiff_t>(begin + n));
  }
  return out;
}

}  // namespace graphshard::engine
