#ifndef GRAPHSHARD_CLIENT_LINK_TASK_H_
#define GRAPHSHARD_CLIENT_LINK_TASK_H_

// Link prediction (--task link): its options and flags, the check that the partition has what
// the task needs, and the metrics (AUC, MRR, Hits@K) with their reduction over ranks. No Torch:
// the epoch loop scores the edges and hands plain floats here. Thread-safe: pure functions;
// LinkEvalCounts is a plain value.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/communicator.h"
#include "client/data_types.h"
#include "common/flags.h"

namespace graphshard::client {

struct LinkOptions {
  // --target-edge-type SRC__REL__DST: the edge type predicted (default: the graph's only one).
  std::string target_edge_type;
  int neg_ratio = 1;              // --neg-ratio: negatives per positive training edge
  bool degree_negatives = false;  // --neg-sampling degree (else uniform)
  int eval_neg_ratio = 20;        // --eval-neg-ratio: negatives per val / test edge
  int hits_k = 10;                // --hits-k: Hits@K
};

// Binds --target-edge-type, --neg-ratio, --neg-sampling, --eval-neg-ratio, --hits-k.
void RegisterLinkFlags(common::FlagSet& flags, LinkOptions& o);

// The options' part of the config fingerprint ("" unless the task is link).
std::string LinkFingerprint(const LinkOptions& o);

// The index in md.edge_types of the predicted edge type. FailedPrecondition naming what is
// missing: no --target-edge-type on a graph with several edge types (listing them), an edge
// type the graph lacks, or one without train / val / test edge splits (partition with
// --edge-split).
absl::StatusOr<int> FindLinkEdgeType(const LinkOptions& o, const ServerMetadata& md);

// The evaluation of one split on one rank, summed: histograms of the scores of positive and
// negative edges (AUC), and per positive edge its reciprocal rank and Hits@K among its own
// negatives (ties count half, as OGB's evaluator averages its optimistic and pessimistic
// ranks). Plain numbers, so ranks sum them with one all-reduce.
struct LinkEvalCounts {
  // Scores (logits) go to kBins bins of sign(s) * log1p(|s|) over [-kRange, kRange]: AUC is exact
  // up to pairs sharing a bin, which count half.
  static constexpr int kBins = 1 << 14;
  static constexpr double kRange = 12.0;
  std::vector<double> pos_hist = std::vector<double>(kBins, 0.0);
  std::vector<double> neg_hist = std::vector<double>(kBins, 0.0);
  double reciprocal_rank_sum = 0;
  double hits_sum = 0;
  double ranked = 0;   // positives with at least one negative
  double correct = 0;  // threshold 0 (probability 0.5) classifications right
  double total = 0;    // edges scored
};

// Adds one batch: `pos` the positives' scores [P], `neg` the negatives' [P * ratio] (negative j
// of positive i at j * P + i, as the batch lays them out).
void AddLinkScores(absl::Span<const float> pos, absl::Span<const float> neg, int hits_k,
                   LinkEvalCounts& counts);

struct LinkMetrics {
  double auc = 0;
  double mrr = 0;
  double hits = 0;  // Hits@K
  double acc = 0;
  double edges = 0;  // edges scored (0: an empty split, nothing measured)
};
LinkMetrics ComputeLinkMetrics(const LinkEvalCounts& counts);

// Sums `counts` over ranks in place (one collective).
absl::Status ReduceLinkCounts(Communicator& comm, LinkEvalCounts& counts);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_LINK_TASK_H_
