#include "server/engine/split_gathers.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/feature_dtype.h"

namespace graphshard::engine {
namespace {

// Where a piece's item comes from: ids [begin, begin + count) of the request's item `item`.
struct Slice {
  size_t item = 0;
  size_t begin = 0;
  size_t count = 0;
};

struct Piece {
  std::vector<TypedIds> ask;  // what the peer is asked (one entry per slice)
  std::vector<Slice> slices;
};

// The request cut into pieces of at most `piece_bytes` (rows and labels); `row_bytes[i]` is
// item i's cost per id. An item without ids goes whole into the first piece (its answer gives
// the feature width).
std::vector<Piece> Cut(const std::vector<TypedIds>& items, const std::vector<int64_t>& row_bytes,
                       int64_t piece_bytes) {
  std::vector<Piece> pieces(1);
  int64_t used = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::vector<int64_t>& ids = items[i].ids;
    const int64_t per_id = std::max<int64_t>(row_bytes[i], 1);
    if (ids.empty()) {
      pieces.front().ask.push_back({items[i].node_type, {}});
      pieces.front().slices.push_back({i, 0, 0});
      continue;
    }
    size_t begin = 0;
    while (begin < ids.size()) {
      int64_t room = (piece_bytes - used) / per_id;
      if (room <= 0 && !pieces.back().ask.empty()) {
        pieces.emplace_back();
        used = 0;
        room = piece_bytes / per_id;
      }
      room = std::max<int64_t>(room, 1);  // a row larger than a piece goes alone
      const size_t n = std::min(ids.size() - begin, static_cast<size_t>(room));
      Piece& p = pieces.back();
      p.ask.push_back({items[i].node_type,
                       std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                            ids.begin() + static_cast<std::ptrdiff_t>(begin + n))});
      p.slices.push_back({i, begin, n});
      used += static_cast<int64_t>(n) * per_id;
      begin += n;
    }
  }
  return pieces;
}

// The pieces' answers as they arrive; the last one to arrive hands the assembly to `done`.
struct Pending {
  int part = 0;
  FeatureDtype dtype = FeatureDtype::kFloat32;
  std::vector<size_t> item_sizes;  // ids per item of the request
  std::vector<Piece> pieces;
  std::vector<std::optional<Answer<std::vector<FeatureBlock>>>> answers;
  std::atomic<size_t> left{0};
  Peers::Callback<std::vector<FeatureBlock>> done;
};

// The request's blocks from the pieces' blocks (run where the answer is taken): rows point
// into the pieces' blocks, which every result block keeps alive.
absl::StatusOr<std::vector<FeatureBlock>> Assemble(Pending& p) {
  auto held = std::make_shared<std::vector<std::vector<FeatureBlock>>>();
  held->reserve(p.pieces.size());
  for (size_t k = 0; k < p.pieces.size(); ++k) {
    absl::StatusOr<std::vector<FeatureBlock>> got = std::move(*p.answers[k]).Take();
    if (!got.ok()) return got.status();
    if (got->size() != p.pieces[k].slices.size()) {
      return absl::DataLossError(absl::StrCat("peer part ", p.part, " answered ", got->size(),
                                              " feature blocks for ", p.pieces[k].slices.size()));
    }
    held->push_back(*std::move(got));
  }
  const int64_t elem = common::FeatureBytes(p.dtype);
  std::vector<FeatureBlock> out(p.item_sizes.size());
  std::vector<bool> width_known(out.size(), false);
  for (FeatureBlock& b : out) b.keep = held;
  for (size_t k = 0; k < p.pieces.size(); ++k) {
    for (size_t s = 0; s < p.pieces[k].slices.size(); ++s) {
      const Slice& slice = p.pieces[k].slices[s];
      const FeatureBlock& got = (*held)[k][s];
      FeatureBlock& b = out[slice.item];
      if (!width_known[slice.item]) {
        b.feat_dim = got.feat_dim;
        b.labels.resize(p.item_sizes[slice.item]);
        b.rows.resize(p.item_sizes[slice.item]);
        width_known[slice.item] = true;
      }
      const int64_t row = got.feat_dim * elem;
      if (got.feat_dim != b.feat_dim || got.labels.size() != slice.count || !got.HasRowsOf(row)) {
        return absl::DataLossError(absl::StrCat("peer part ", p.part,
                                                " answered a malformed feature block (piece ", k,
                                                " of ", p.pieces.size(), ")"));
      }
      for (size_t j = 0; j < slice.count; ++j) {
        b.labels[slice.begin + j] = got.labels[j];
        b.rows[slice.begin + j] = got.Row(static_cast<int64_t>(j), row);
      }
    }
  }
  return out;
}

}  // namespace

SplitGathers::SplitGathers(Peers& inner, std::map<std::string, int64_t> feat_dims,
                           int64_t piece_bytes)
    : ForwardingPeers(inner),
      feat_dims_(std::move(feat_dims)),
      piece_bytes_(std::max<int64_t>(piece_bytes, 1)) {}

std::map<std::string, int64_t> SplitGathers::FeatDimsOf(const LocalPart& local) {
  std::map<std::string, int64_t> dims;
  for (const NodeType& t : local.node_types()) {
    if (t.shard != nullptr) dims[t.name] = t.shard->feat_dim;
  }
  return dims;
}

void SplitGathers::GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                                  Callback<std::vector<FeatureBlock>> done) {
  const int64_t elem = common::FeatureBytes(dtype);
  std::vector<int64_t> row_bytes(items.size(), 0);
  int64_t total = 0;
  bool all_known = true;
  for (size_t i = 0; i < items.size(); ++i) {
    auto it = feat_dims_.find(items[i].node_type);
    if (it == feat_dims_.end()) {
      all_known = false;
      break;
    }
    row_bytes[i] = it->second * elem + 8;  // the row and its label
    total += row_bytes[i] * std::ssize(items[i].ids);
  }
  if (!all_known || total <= piece_bytes_) {
    inner_.GatherFeatures(part, std::move(items), dtype, std::move(done));
    return;
  }
  auto p = std::make_shared<Pending>();
  p->part = part;
  p->dtype = dtype;
  for (const TypedIds& t : items) p->item_sizes.push_back(t.ids.size());
  p->pieces = Cut(items, row_bytes, piece_bytes_);
  items.clear();
  p->answers.resize(p->pieces.size());
  p->left = p->pieces.size();
  p->done = std::move(done);
  for (size_t k = 0; k < p->pieces.size(); ++k) {
    // Each answer slot is written by its own callback only; the last one to arrive (acq_rel on
    // `left`) sees them all.
    inner_.GatherFeatures(
        part, std::move(p->pieces[k].ask), dtype, [p, k](Answer<std::vector<FeatureBlock>> a) {
          p->answers[k] = std::move(a);
          if (p->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
          p->done(Answer<std::vector<FeatureBlock>>::Deferred(
              [p]() -> absl::StatusOr<std::vector<FeatureBlock>> { return Assemble(*p); }));
        });
  }
}

}  // namespace graphshard::engine
