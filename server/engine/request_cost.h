#ifndef GRAPHSHARD_SERVER_ENGINE_REQUEST_COST_H_
#define GRAPHSHARD_SERVER_ENGINE_REQUEST_COST_H_

// What a request can cost at most, computed from its sizes before any work starts, so that a
// request beyond the budget (Limits::max_request_*) is refused instead of discovered at 13 GB.
//
// A minibatch's bound follows its hops: hop h samples at most min(fanout, max in-degree) edges
// per frontier node of the edge type's dst type (fanout -1: the max in-degree, from the
// manifest's max_in_degree; the type's edge count for folders without it; with replacement
// exactly fanout), and every sampled edge may bring a new node. Outside disjoint mode a type
// never holds more than its node count and the hops together never take an edge twice (a node
// is expanded once), so those cap the bound; in disjoint mode each seed's tree is capped the
// same way, so the caps are multiplied by the number of seeds. Arithmetic is in doubles: a
// bound that overflows int64 is simply too large. (A single hop, LocalPart::SampleOneHop, is
// counted exactly from the part's degrees instead.)

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/engine/local_part.h"
#include "server/engine/types.h"

namespace graphshard::engine {

struct RequestCost {
  double nodes = 0;  // sampled nodes, every type (and every tree)
  double edges = 0;  // sampled edges, every type
  double bytes = 0;  // the arrays the request builds: ids, labels, trees, edges, feature rows
  // The answer as sent inline (protobuf bytes fields): ids, labels and rows per node, src and
  // dst per edge; what must fit the transport's message limit.
  double answer_bytes = 0;
};

// The bound of one minibatch of `num_seeds` seeds of type `seed_type` (an index into
// local.node_types()) over `hops` hops of `sampling` (already validated).
RequestCost MinibatchCost(const LocalPart& local, int seed_type, int64_t num_seeds,
                          const SamplingConfig& sampling, int hops);
// The same for a batch given by its seed type's name (empty = the target type) and sampling:
// InvalidArgument for an unknown type or a malformed sampling config.
absl::StatusOr<RequestCost> BatchCost(const LocalPart& local, const std::string& seed_type,
                                      int64_t num_seeds, const SamplingConfig& sampling);
// One GatherFeatures answer: rows in `dtype` and labels.
RequestCost GatherCost(const LocalPart& local, absl::Span<const TypedIds> items,
                       FeatureDtype dtype);

// ResourceExhausted naming the first budget of `limits` that `cost` exceeds, the bound, and the
// graphshard-server flag that raises it; `what` says which request ("minibatch of 10000 seeds").
absl::Status CheckCost(const RequestCost& cost, const Limits& limits, absl::string_view what);

// ResourceExhausted when `cost.answer_bytes` exceeds `max_answer_bytes` (an answer that could not
// be sent: refused before any work), naming the request, the bound and the limit.
absl::Status CheckAnswer(const RequestCost& cost, int64_t max_answer_bytes, absl::string_view what);

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_REQUEST_COST_H_
