#include "server/engine/cached_peers.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/feature_dtype.h"
#include "common/half_rows.h"

namespace graphshard::engine {
namespace {

// Writes n elements at `src` (dtype `from`) as `to` at `dst`. Only the conversions a peer makes
// (float32 -> 16-bit, with ConvertFloatRow) and exact widening (16-bit -> float32) happen here;
// 16-bit -> another 16-bit never does (it would round twice). `tmp` holds an aligned copy of a
// float32 row that is not 4-byte aligned (rows of a cache or an answer always are).
void ConvertRow(const char* src, FeatureDtype from, int64_t n, FeatureDtype to, char* dst,
                std::vector<float>& tmp) {
  if (n <= 0) return;  // a type without features: src and dst may be null
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(n * common::FeatureBytes(to)));
    return;
  }
  if (from == FeatureDtype::kFloat32) {
    if (reinterpret_cast<std::uintptr_t>(src) % alignof(float) == 0) {
      ConvertFloatRow(reinterpret_cast<const float*>(src), n, to, dst);
      return;
    }
    tmp.resize(static_cast<size_t>(n));
    std::memcpy(tmp.data(), src, static_cast<size_t>(n) * 4);
    ConvertFloatRow(tmp.data(), n, to, dst);
    return;
  }
  if (from == FeatureDtype::kFloat16) {
    common::HalfsToFloat(src, n, dst);
  } else {
    common::BFloat16sToFloat(src, n, dst);
  }
}

// How a request in `dtype` is asked of peers.
FeatureDtype WireFor(FeatureDtype dtype, FeatureDtype wire) {
  return dtype == FeatureDtype::kFloat32 ? wire : dtype;
}

}  // namespace

int64_t CacheRowBytes(int64_t feat_dim, FeatureDtype store_dtype) {
  // The row, its int64 label, and an absl::flat_hash_map<int64_t, int64_t> slot (16 bytes) at
  // its usual load factor plus its control byte.
  return feat_dim * common::FeatureBytes(store_dtype) + 8 + 24;
}

std::vector<std::vector<TypedIds>> ChooseHotRows(const LocalPart& local, int64_t capacity_bytes,
                                                 FeatureDtype store_dtype) {
  const int k = local.num_parts();
  const int self = local.part_index();
  std::vector<std::vector<TypedIds>> out(k);
  if (capacity_bytes <= 0) return out;
  const std::vector<NodeType>& types = local.node_types();
  // In-edges from this part's nodes per remote source node (this part holds every in-edge of
  // its nodes, so these are all the edges its sampling can take to that node).
  std::vector<std::vector<uint32_t>> counts(types.size());
  for (const EdgeType& e : local.edge_types()) {
    const common::PartitionBook& book = *types[e.src].book;
    std::vector<uint32_t>& c = counts[e.src];
    if (c.empty()) c.assign(static_cast<size_t>(book.num_nodes()), 0);
    const int64_t begin = book.begin(self), end = book.end(self);
    const common::CscView& csc = e.shard->csc;
    for (int64_t i = 0; i < csc.num_edges(); ++i) {
      const int64_t u = csc.Source(i);
      if (u >= begin && u < end) continue;
      uint32_t& n = c[static_cast<size_t>(u)];
      if (n != std::numeric_limits<uint32_t>::max()) ++n;
    }
  }
  // The budget taken greedily by count, without sorting every candidate: bytes per count (counts
  // above kBins share the top bin), then the count at which the budget runs out (`threshold`);
  // above it every row is taken, at it rows in (type, id) order while they fit.
  constexpr uint32_t kBins = 1 << 16;
  std::vector<int64_t> cost(types.size());
  for (size_t t = 0; t < types.size(); ++t) {
    cost[t] = CacheRowBytes(types[t].shard->feat_dim, store_dtype);
  }
  std::vector<int64_t> bytes_at(kBins + 1, 0);
  for (size_t t = 0; t < types.size(); ++t) {
    for (uint32_t n : counts[t]) {
      if (n > 0) bytes_at[std::min(n, kBins)] += cost[t];
    }
  }
  int64_t used = 0;
  uint32_t threshold = 0;  // 0: every row with an in-edge fits
  for (uint32_t b = kBins; b >= 1; --b) {
    if (used + bytes_at[b] > capacity_bytes) {
      threshold = b;
      break;
    }
    used += bytes_at[b];
  }
  for (size_t t = 0; t < types.size(); ++t) {
    const common::PartitionBook& book = *types[t].book;
    std::vector<TypedIds*> item(k, nullptr);
    for (size_t id = 0; id < counts[t].size(); ++id) {
      const uint32_t bin = std::min(counts[t][id], kBins);
      if (bin == 0 || bin < threshold) continue;
      if (bin == threshold) {
        if (used + cost[t] > capacity_bytes) continue;
        used += cost[t];
      }
      const int p = book.Owner(static_cast<int64_t>(id));
      if (item[p] == nullptr) {
        out[p].push_back({types[t].name, {}});
        item[p] = &out[p].back();
      }
      item[p]->ids.push_back(static_cast<int64_t>(id));
    }
  }
  return out;
}

void CachedPeers::TypeRows::MaybeDense() {
  if (row_of.empty() || std::ssize(row_of) > std::numeric_limits<int32_t>::max()) return;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const auto& [id, row] : row_of) {
    lo = std::min(lo, id);
    hi = std::max(hi, id);
  }
  const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
  if (range > static_cast<uint64_t>(std::ssize(row_of)) * 4) return;  // 4 x 4 B <= 16 B a row
  dense_begin = lo;
  dense.assign(range, -1);
  for (const auto& [id, row] : row_of) dense[static_cast<size_t>(id - lo)] = static_cast<int32_t>(row);
  absl::flat_hash_map<int64_t, int64_t>().swap(row_of);
}

const CachedPeers::TypeRows* CachedPeers::PartRows::Find(const std::string& node_type) const {
  for (const TypeRows& t : types) {
    if (t.node_type == node_type) return &t;
  }
  return nullptr;
}

CachedPeers::CachedPeers(const LocalPart& local, Peers& inner, CachedPeersOptions options)
    : ForwardingPeers(inner), local_(local), options_(std::move(options)) {
  absl::MutexLock lock(&mu_);
  parts_.resize(static_cast<size_t>(local_.num_parts()));
  if (options_.capacity_bytes <= 0) {
    fill_done_ = true;
    return;
  }
  fill_ = std::thread([this] { FillLoop(); });
}

CachedPeers::~CachedPeers() {
  {
    absl::MutexLock lock(&mu_);
    stop_requested_ = true;
  }
  stop_.store(true, std::memory_order_release);
  if (fill_.joinable()) fill_.join();
}

std::shared_ptr<const CachedPeers::PartRows> CachedPeers::RowsOf(int part) const {
  absl::MutexLock lock(&mu_);
  if (part < 0 || part >= std::ssize(parts_)) return nullptr;
  return parts_[static_cast<size_t>(part)];
}

// What one GatherFeatures needs to merge cached rows and the peer's answer in request order.
struct CachedPeers::Assembly {
  int part = 0;
  std::vector<TypedIds> items;
  FeatureDtype dtype = FeatureDtype::kFloat32;  // asked of us
  FeatureDtype wire = FeatureDtype::kFloat32;   // asked of the peer
  FeatureDtype store = FeatureDtype::kFloat32;  // of the cached rows
  std::shared_ptr<const PartRows> rows;         // keeps the cached rows alive
  std::vector<const TypeRows*> cached;          // per item; null when none of its type
  std::vector<std::vector<int64_t>> hit_row;    // per item and id: cached row or -1
  std::vector<int> miss_item;                   // per item: its index among the misses, or -1

  // The answer in request order: rows point into the cache and into `misses` (kept alive by
  // the blocks); only rows of another dtype are converted (written once).
  absl::StatusOr<std::vector<FeatureBlock>> Merge(std::vector<FeatureBlock> misses) const;
};

absl::StatusOr<std::vector<FeatureBlock>> CachedPeers::Assembly::Merge(
    std::vector<FeatureBlock> misses_in) const {
  struct Held {
    std::shared_ptr<const PartRows> rows;
    std::vector<FeatureBlock> misses;
  };
  auto held = std::make_shared<Held>(Held{rows, std::move(misses_in)});
  const std::vector<FeatureBlock>& misses = held->misses;
  std::vector<FeatureBlock> out(items.size());
  std::vector<float> tmp;
  const int64_t out_elem = common::FeatureBytes(dtype), wire_elem = common::FeatureBytes(wire);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::vector<int64_t>& ids = items[i].ids;
    const FeatureBlock* fb = nullptr;
    if (miss_item[i] >= 0) {
      if (miss_item[i] >= std::ssize(misses)) {
        return absl::DataLossError(absl::StrCat("peer part ", part, " answered ", misses.size(),
                                                " feature blocks for ", miss_item[i] + 1,
                                                " or more"));
      }
      fb = &misses[static_cast<size_t>(miss_item[i])];
    }
    const int64_t feat_dim = fb != nullptr ? fb->feat_dim : cached[i]->feat_dim;
    int64_t num_misses = 0;
    for (int64_t r : hit_row[i]) num_misses += r < 0 ? 1 : 0;
    if (fb != nullptr &&
        (std::ssize(fb->labels) != num_misses ||
         std::ssize(fb->features) != num_misses * feat_dim * wire_elem ||
         (cached[i] != nullptr && num_misses < std::ssize(ids) && cached[i]->feat_dim != feat_dim))) {
      return absl::DataLossError(absl::StrCat("peer part ", part, " answered a malformed '",
                                              items[i].node_type, "' feature block"));
    }
    FeatureBlock& b = out[i];
    b.feat_dim = feat_dim;
    const int64_t row_out = feat_dim * out_elem;
    const int64_t row_store = feat_dim * common::FeatureBytes(store);
    const int64_t num_hits = std::ssize(ids) - num_misses;
    // Only rows of another dtype than asked are written here; the others are pointed at.
    const int64_t converted = (store != dtype ? num_hits : 0) + (wire != dtype ? num_misses : 0);
    struct Kept {
      std::shared_ptr<const Held> held;
      std::vector<char> converted;
    };
    auto kept = std::make_shared<Kept>(Kept{held, {}});
    kept->converted.resize(static_cast<size_t>(converted * row_out));
    b.labels.resize(ids.size());
    b.rows.resize(ids.size());
    b.keep = kept;
    int64_t next_miss = 0, next_converted = 0;
    for (size_t j = 0; j < ids.size(); ++j) {
      const int64_t r = hit_row[i][j];
      const char* src = nullptr;
      FeatureDtype from = dtype;
      if (r >= 0) {
        src = cached[i]->features.data() + r * row_store;
        from = store;
        b.labels[j] = cached[i]->labels[static_cast<size_t>(r)];
      } else {
        src = fb->features.data() + next_miss * feat_dim * wire_elem;
        from = wire;
        b.labels[j] = fb->labels[static_cast<size_t>(next_miss)];
        ++next_miss;
      }
      if (from == dtype) {
        b.rows[j] = src;
      } else {
        char* dst = kept->converted.data() + next_converted++ * row_out;
        ConvertRow(src, from, feat_dim, dtype, dst, tmp);
        b.rows[j] = dst;
      }
    }
  }
  return out;
}

void CachedPeers::GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                                 Callback<std::vector<FeatureBlock>> done) {
  const FeatureDtype wire = WireFor(dtype, options_.wire_dtype);
  std::shared_ptr<const PartRows> rows = RowsOf(part);
  const FeatureDtype store = options_.wire_dtype;
  // Cached rows serve a request when they are in its wire dtype, or float32 (converted as the
  // peer would): never rounded twice.
  const bool usable = rows != nullptr && (store == wire || store == FeatureDtype::kFloat32);
  if (!usable) {
    int64_t n = 0;
    for (const TypedIds& item : items) n += std::ssize(item.ids);
    misses_.fetch_add(n, std::memory_order_relaxed);
    if (wire == dtype) {
      inner_.GatherFeatures(part, std::move(items), dtype, std::move(done));
      return;
    }
  }
  auto a = std::make_shared<Assembly>();
  a->part = part;
  a->dtype = dtype;
  a->wire = wire;
  a->store = store;
  a->rows = usable ? std::move(rows) : nullptr;
  a->cached.resize(items.size(), nullptr);
  a->hit_row.resize(items.size());
  a->miss_item.resize(items.size(), -1);
  std::vector<TypedIds> misses;
  int64_t hits = 0, saved = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const TypeRows* t = a->rows != nullptr ? a->rows->Find(items[i].node_type) : nullptr;
    a->cached[i] = t;
    std::vector<int64_t>& hit = a->hit_row[i];
    hit.assign(items[i].ids.size(), -1);
    TypedIds miss{items[i].node_type, {}};
    for (size_t j = 0; j < items[i].ids.size(); ++j) {
      if (t != nullptr) {
        const int64_t r = t->RowOf(items[i].ids[j]);
        if (r >= 0) {
          hit[j] = r;
          continue;
        }
      }
      miss.ids.push_back(items[i].ids[j]);
    }
    const int64_t item_hits = std::ssize(items[i].ids) - std::ssize(miss.ids);
    hits += item_hits;
    if (t != nullptr) saved += item_hits * (t->feat_dim * common::FeatureBytes(wire) + 8);
    // An item with no hit (an empty one included) goes to the peer whole: its answer gives
    // the feature width.
    if (item_hits == 0 || !miss.ids.empty()) {
      a->miss_item[i] = static_cast<int>(misses.size());
      misses.push_back(std::move(miss));
    }
  }
  if (a->rows != nullptr) {
    int64_t n = 0;
    for (const TypedIds& m : misses) n += std::ssize(m.ids);
    hits_.fetch_add(hits, std::memory_order_relaxed);
    misses_.fetch_add(n, std::memory_order_relaxed);
    bytes_saved_.fetch_add(saved, std::memory_order_relaxed);
  }
  if (hits == 0 && wire == dtype) {  // nothing to merge: the peer's answer as it is (one copy less)
    inner_.GatherFeatures(part, std::move(items), dtype, std::move(done));
    return;
  }
  a->items = std::move(items);
  if (misses.empty()) {
    done(a->Merge({}));
    return;
  }
  // The merge (every remote row of the batch written once more) runs where the answer is
  // taken, on the builder's thread, not on the transport's.
  inner_.GatherFeatures(part, std::move(misses), wire,
                        [a, done = std::move(done)](Answer<std::vector<FeatureBlock>> r) {
                          done(Answer<std::vector<FeatureBlock>>::Deferred(
                              [a, r = std::move(r)]() mutable
                              -> absl::StatusOr<std::vector<FeatureBlock>> {
                                absl::StatusOr<std::vector<FeatureBlock>> answered =
                                    std::move(r).Take();
                                if (!answered.ok()) return answered.status();
                                return a->Merge(*std::move(answered));
                              }));
                        });
}

PeerCacheCounters CachedPeers::counters() const {
  PeerCacheCounters c;
  c.capacity_bytes = options_.capacity_bytes;
  c.store_dtype = options_.wire_dtype;
  c.hits = hits_.load(std::memory_order_relaxed);
  c.misses = misses_.load(std::memory_order_relaxed);
  c.bytes_saved = bytes_saved_.load(std::memory_order_relaxed);
  c.fill_bytes = fill_bytes_.load(std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  c.rows = rows_;
  c.bytes = bytes_;
  c.parts_filled = parts_filled_;
  c.parts_pending = parts_pending_;
  return c;
}

bool CachedPeers::WaitFilled(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&fill_done_), timeout);
}

void CachedPeers::FillLoop() {
  const absl::Time t0 = absl::Now();
  std::vector<std::vector<TypedIds>> hot =
      ChooseHotRows(local_, options_.capacity_bytes, options_.wire_dtype);
  const int k = local_.num_parts();
  std::vector<int> pending;
  for (int p = 0; p < k; ++p) {
    if (!hot[static_cast<size_t>(p)].empty()) pending.push_back(p);
  }
  {
    absl::MutexLock lock(&mu_);
    parts_pending_ = std::ssize(pending);
  }
  if (options_.log) {
    std::fprintf(stderr, "graphshard-server: peer cache: hot rows of %zu parts chosen in %.2f s\n",
                 pending.size(), absl::ToDoubleSeconds(absl::Now() - t0));
  }
  std::vector<absl::Duration> backoff(static_cast<size_t>(k), options_.retry_min);
  std::vector<absl::Time> next(static_cast<size_t>(k), absl::InfinitePast());
  std::vector<bool> warned(static_cast<size_t>(k), false);
  while (!pending.empty() && !Stopping()) {
    absl::Time earliest = absl::InfiniteFuture();
    for (auto it = pending.begin(); it != pending.end() && !Stopping();) {
      const size_t p = static_cast<size_t>(*it);
      if (next[p] <= absl::Now()) {
        absl::Status filled = FillPart(*it, hot[p]);
        if (Stopping()) return;
        if (filled.ok()) {
          it = pending.erase(it);
          continue;
        }
        if (options_.log && !warned[p]) {
          std::fprintf(stderr,
                       "graphshard-server: peer cache: part %d not filled yet (%s); asking again "
                       "every %s at most\n",
                       *it, std::string(filled.message()).c_str(),
                       absl::FormatDuration(options_.retry_max).c_str());
          warned[p] = true;
        }
        next[p] = absl::Now() + backoff[p];
        backoff[p] = std::min(2 * backoff[p], options_.retry_max);
      }
      earliest = std::min(earliest, next[p]);
      ++it;
    }
    if (pending.empty()) break;
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(&stop_requested_), earliest);
  }
  absl::MutexLock lock(&mu_);
  fill_done_ = !stop_requested_;
}

absl::Status CachedPeers::NotCached(int part) {
  absl::MutexLock lock(&mu_);
  --parts_pending_;
  if (options_.log) {
    std::fprintf(stderr, "graphshard-server: peer cache: part %d is read in-process; not cached\n",
                 part);
  }
  return absl::OkStatus();
}

absl::Status CachedPeers::FillPart(int part, const std::vector<TypedIds>& rows) {
  const FeatureDtype store = options_.wire_dtype;
  auto filled = std::make_shared<PartRows>();
  int64_t num_rows = 0, bytes = 0, fetched = 0;
  if (inner_.MappedPart(part) != nullptr) return NotCached(part);
  for (const TypedIds& want : rows) {
    const int t = local_.NodeTypeIndex(want.node_type);
    const int64_t feat_dim = local_.node_types()[static_cast<size_t>(t)].shard->feat_dim;
    const int64_t row_bytes = feat_dim * common::FeatureBytes(store);
    const int64_t chunk = std::max<int64_t>(1, options_.fill_chunk_bytes / std::max<int64_t>(row_bytes, 8));
    TypeRows& dst = filled->types.emplace_back();
    dst.node_type = want.node_type;
    dst.feat_dim = feat_dim;
    dst.features.reserve(static_cast<size_t>(std::ssize(want.ids) * row_bytes));
    dst.labels.reserve(want.ids.size());
    dst.row_of.reserve(want.ids.size());
    for (int64_t begin = 0; begin < std::ssize(want.ids); begin += chunk) {
      const int64_t end = std::min<int64_t>(begin + chunk, std::ssize(want.ids));
      TypedIds ask{want.node_type, std::vector<int64_t>(want.ids.begin() + begin,
                                                        want.ids.begin() + end)};
      // The answer may come on another thread, after this function gave up (stop): `state`
      // outlives both.
      struct State {
        absl::Mutex mu;
        bool done ABSL_GUARDED_BY(mu) = false;
        std::optional<Answer<std::vector<FeatureBlock>>> answer ABSL_GUARDED_BY(mu);
      };
      auto state = std::make_shared<State>();
      inner_.GatherFeatures(part, {std::move(ask)}, store,
                            [state](Answer<std::vector<FeatureBlock>> r) {
                              absl::MutexLock lock(&state->mu);
                              state->answer = std::move(r);
                              state->done = true;
                            });
      const absl::Time deadline = absl::Now() + options_.fill_timeout;
      absl::MutexLock lock(&state->mu);
      while (!state->mu.AwaitWithTimeout(absl::Condition(&state->done), absl::Milliseconds(50))) {
        if (Stopping()) return absl::CancelledError("the cache is stopping");
        if (absl::Now() >= deadline) {
          return absl::DeadlineExceededError(absl::StrCat(
              "peer part ", part, " did not answer the cache's fill within ",
              absl::FormatDuration(options_.fill_timeout)));
        }
      }
      absl::StatusOr<std::vector<FeatureBlock>> result = std::move(*state->answer).Take();
      if (!result.ok()) return result.status();
      const std::vector<FeatureBlock>& got = *result;
      const int64_t n = end - begin;
      if (got.size() != 1 || got[0].feat_dim != feat_dim || std::ssize(got[0].labels) != n ||
          std::ssize(got[0].features) != n * row_bytes) {
        return absl::DataLossError(absl::StrCat("peer part ", part, " answered a malformed '",
                                                want.node_type, "' block to the cache's fill"));
      }
      dst.features.insert(dst.features.end(), got[0].features.begin(), got[0].features.end());
      dst.labels.insert(dst.labels.end(), got[0].labels.begin(), got[0].labels.end());
      for (int64_t j = begin; j < end; ++j) dst.row_of.emplace(want.ids[static_cast<size_t>(j)], j);
      fetched += n * (row_bytes + 8);
      fill_bytes_.fetch_add(n * (row_bytes + 8), std::memory_order_relaxed);
      // The first answer proves the peer is up: a part the engine reads in-process (same-host
      // peer, --peer-features local) needs no cache.
      if (begin == 0 && &want == &rows.front() && inner_.MappedPart(part) != nullptr) {
        return NotCached(part);
      }
    }
    dst.MaybeDense();
    num_rows += std::ssize(want.ids);
    bytes += std::ssize(want.ids) * CacheRowBytes(feat_dim, store);
  }
  absl::MutexLock lock(&mu_);
  parts_[static_cast<size_t>(part)] = std::move(filled);
  rows_ += num_rows;
  bytes_ += bytes;
  ++parts_filled_;
  --parts_pending_;
  if (options_.log) {
    std::fprintf(stderr,
                 "graphshard-server: peer cache: part %d: %lld rows (%.1f MiB, %s) cached; "
                 "%.1f MiB fetched\n",
                 part, static_cast<long long>(num_rows), static_cast<double>(bytes) / (1 << 20),
                 std::string(common::FeatureDtypeName(store)).c_str(),
                 static_cast<double>(fetched) / (1 << 20));
  }
  return absl::OkStatus();
}

}  // namespace graphshard::engine
