#include "client/link_task.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace graphshard::client {
namespace {

int BinOf(float score) {
  const double s = static_cast<double>(score);
  double x = std::copysign(std::log1p(std::fabs(s)), s);
  if (std::isnan(x)) x = 0;
  x = std::clamp(x, -LinkEvalCounts::kRange, LinkEvalCounts::kRange);
  const int bin = static_cast<int>((x + LinkEvalCounts::kRange) / (2 * LinkEvalCounts::kRange) *
                                   LinkEvalCounts::kBins);
  return std::clamp(bin, 0, LinkEvalCounts::kBins - 1);
}

}  // namespace

void RegisterLinkFlags(common::FlagSet& flags, LinkOptions& o) {
  flags.AddString("target-edge-type", &o.target_edge_type, "SRC__REL__DST",
                  "--task link: the edge type predicted (default: the graph's only one)");
  flags.AddInt("neg-ratio", &o.neg_ratio, "R",
               "--task link: negative edges per positive training edge", {.min = 1, .max = 1000});
  flags.AddCustom("neg-sampling", "uniform|degree",
                  "--task link: negative destinations uniform over the destination type, or\n"
                  "in proportion to their number of training edges",
                  "uniform", [&o](absl::string_view v) -> absl::Status {
                    if (v != "uniform" && v != "degree") {
                      return absl::InvalidArgumentError("expected one of uniform, degree");
                    }
                    o.degree_negatives = v == "degree";
                    return absl::OkStatus();
                  });
  flags.AddInt("eval-neg-ratio", &o.eval_neg_ratio, "R",
               "--task link: negatives per val/test edge (AUC, MRR, Hits@K)",
               {.min = 1, .max = 1000});
  flags.AddInt("hits-k", &o.hits_k, "K", "--task link: K of Hits@K", {.min = 1});
}

std::string LinkFingerprint(const LinkOptions& o) {
  return absl::StrCat(" link=", o.target_edge_type, " neg=", o.neg_ratio,
                      o.degree_negatives ? ":degree" : ":uniform");
}

absl::StatusOr<int> FindLinkEdgeType(const LinkOptions& o, const ServerMetadata& md) {
  std::vector<std::string> names;
  for (const EdgeTypeInfo& e : md.edge_types) names.push_back(e.name);
  int index = -1;
  if (o.target_edge_type.empty()) {
    if (md.edge_types.size() != 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--task link on a graph with ", md.edge_types.size(),
          " edge types needs --target-edge-type, one of: ", absl::StrJoin(names, ", ")));
    }
    index = 0;
  } else {
    for (size_t e = 0; e < names.size(); ++e) {
      if (names[e] == o.target_edge_type) index = static_cast<int>(e);
    }
    if (index < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--target-edge-type ", o.target_edge_type, ": the graph has no such edge type (it has ",
          absl::StrJoin(names, ", "), ")"));
    }
  }
  const EdgeTypeInfo& e = md.edge_types[static_cast<size_t>(index)];
  for (const char* split : {"train", "val", "test"}) {
    bool found = false;
    for (const auto& [name, n] : e.split_sizes) found = found || name == split;
    if (!found) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--task link: edge type ", e.name, " has no '", split,
          "' edge split in this partition; partition it with --edge-split TRAIN,VAL,TEST",
          md.edge_types.size() > 1 ? " --target-edge-type " + e.name : ""));
    }
  }
  return index;
}

void AddLinkScores(absl::Span<const float> pos, absl::Span<const float> neg, int hits_k,
                   LinkEvalCounts& c) {
  for (float s : pos) {
    c.pos_hist[static_cast<size_t>(BinOf(s))] += 1;
    c.correct += s > 0 ? 1 : 0;
  }
  for (float s : neg) {
    c.neg_hist[static_cast<size_t>(BinOf(s))] += 1;
    c.correct += s > 0 ? 0 : 1;
  }
  c.total += static_cast<double>(pos.size() + neg.size());
  const size_t p = pos.size();
  if (p == 0 || neg.size() < p) return;
  const size_t ratio = neg.size() / p;
  for (size_t i = 0; i < p; ++i) {
    double above = 0, tied = 0;
    for (size_t j = 0; j < ratio; ++j) {
      const float n = neg[j * p + i];
      above += n > pos[i] ? 1 : 0;
      tied += n == pos[i] ? 1 : 0;
    }
    const double rank = 1 + above + 0.5 * tied;
    c.reciprocal_rank_sum += 1 / rank;
    c.hits_sum += rank <= hits_k ? 1 : 0;
    c.ranked += 1;
  }
}

LinkMetrics ComputeLinkMetrics(const LinkEvalCounts& c) {
  LinkMetrics m;
  double pos_total = 0, neg_total = 0, wins = 0, neg_below = 0;
  for (int b = 0; b < LinkEvalCounts::kBins; ++b) {
    const double pb = c.pos_hist[static_cast<size_t>(b)];
    const double nb = c.neg_hist[static_cast<size_t>(b)];
    wins += pb * (neg_below + 0.5 * nb);
    neg_below += nb;
    pos_total += pb;
    neg_total += nb;
  }
  m.auc = pos_total > 0 && neg_total > 0 ? wins / (pos_total * neg_total) : 0;
  m.mrr = c.ranked > 0 ? c.reciprocal_rank_sum / c.ranked : 0;
  m.hits = c.ranked > 0 ? c.hits_sum / c.ranked : 0;
  m.acc = c.total > 0 ? c.correct / c.total : 0;
  m.edges = c.total;
  return m;
}

absl::Status ReduceLinkCounts(Communicator& comm, LinkEvalCounts& c) {
  std::vector<double> flat;
  flat.reserve(2 * LinkEvalCounts::kBins + 5);
  flat.insert(flat.end(), c.pos_hist.begin(), c.pos_hist.end());
  flat.insert(flat.end(), c.neg_hist.begin(), c.neg_hist.end());
  flat.insert(flat.end(), {c.reciprocal_rank_sum, c.hits_sum, c.ranked, c.correct, c.total});
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(flat), ReduceOp::kSum));
  const auto bins = static_cast<size_t>(LinkEvalCounts::kBins);
  std::copy(flat.begin(), flat.begin() + static_cast<std::ptrdiff_t>(bins), c.pos_hist.begin());
  std::copy(flat.begin() + static_cast<std::ptrdiff_t>(bins),
            flat.begin() + static_cast<std::ptrdiff_t>(2 * bins), c.neg_hist.begin());
  const double* tail = flat.data() + 2 * bins;
  c.reciprocal_rank_sum = tail[0];
  c.hits_sum = tail[1];
  c.ranked = tail[2];
  c.correct = tail[3];
  c.total = tail[4];
  return absl::OkStatus();
}

}  // namespace graphshard::client
