#include "client/feature_rows.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"

namespace graphshard::client {

namespace {

constexpr size_t kParallelCalls = 8;  // GatherRowsById's and ReadFeatureRows' calls in flight

// A worker's turn to hand its chunk to the sink.
struct Turn {
  const size_t* next;
  size_t mine;
  bool Ready() const { return *next == mine; }
};

// The type's node info, checked to have part offsets.
absl::StatusOr<const NodeTypeInfo*> TypeWithOffsets(const ServerMetadata& metadata, int type) {
  if (type < 0 || type >= std::ssize(metadata.node_types)) {
    return absl::InvalidArgumentError(
        absl::StrCat("node type ", type, " of ", metadata.node_types.size()));
  }
  const NodeTypeInfo& t = metadata.node_types[static_cast<size_t>(type)];
  if (t.feat_dim > 0 && std::ssize(t.part_offsets) != metadata.num_parts + 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the servers do not say which '", t.name, "' ids each part owns (Metadata part_offsets)"));
  }
  return &t;
}

// GatherRows of `ids` (all owned by `part`), asked again of a fresh client when the server
// is gone.
absl::StatusOr<std::string> GatherFromPart(const NodeTypeInfo& t, int part, FeatureDtype dtype,
                                           const ClientOf& client_of,
                                           absl::Span<const int64_t> ids,
                                           const GatherRowsOptions& options = {}) {
  return AskLivePart(client_of, part, [&](PartitionClient& client) {
    return client.GatherRows(t.name, ids, t.feat_dim, dtype, options);
  });
}

}  // namespace

absl::Status ReadFeatureRows(
    const ServerMetadata& metadata, int type, FeatureDtype dtype, const ClientOf& client_of,
    int64_t rows_per_call,
    const std::function<absl::Status(int64_t first_row, int64_t n, std::string rows)>& sink,
    const std::vector<bool>& parts) {
  ASSIGN_OR_RETURN(const NodeTypeInfo* t, TypeWithOffsets(metadata, type));
  if (t->feat_dim == 0) return absl::OkStatus();
  const int64_t per_call = std::max<int64_t>(rows_per_call, 1);
  struct Chunk {
    int part;
    int64_t begin, n, row;
  };
  std::vector<Chunk> chunks;
  int64_t row = 0;
  for (int p = 0; p < metadata.num_parts; ++p) {
    if (!parts.empty() && (p >= std::ssize(parts) || !parts[static_cast<size_t>(p)])) continue;
    const int64_t end = t->part_offsets[static_cast<size_t>(p) + 1];
    for (int64_t begin = t->part_offsets[static_cast<size_t>(p)]; begin < end; begin += per_call) {
      const int64_t n = std::min(per_call, end - begin);
      chunks.push_back({p, begin, n, row});
      row += n;
    }
  }
  // Calls in flight on their own threads (one call at a time measured ~330 MB/s for a 13.5 GB
  // table, tests/bench/RESULTS.md "papers-shaped graph"); each worker hands its rows to the sink
  // in chunk order, so the sink sees rows in order and at most kParallelCalls chunks are held.
  absl::Mutex mu;
  size_t next_chunk = 0, next_sink = 0;
  absl::Status failed;
  auto worker = [&] {
    std::vector<int64_t> ids;
    while (true) {
      size_t i;
      {
        absl::MutexLock lock(&mu);
        if (!failed.ok() || next_chunk == chunks.size()) return;
        i = next_chunk++;
      }
      const Chunk& c = chunks[i];
      ids.resize(static_cast<size_t>(c.n));
      std::iota(ids.begin(), ids.end(), c.begin);
      absl::StatusOr<std::string> rows = GatherFromPart(*t, c.part, dtype, client_of, ids);
      const Turn turn{&next_sink, i};
      absl::MutexLock lock(&mu);
      mu.Await(absl::Condition(&turn, &Turn::Ready));
      if (failed.ok()) {
        absl::Status s = rows.ok() ? sink(c.row, c.n, *std::move(rows)) : rows.status();
        if (!s.ok()) failed = s;
      }
      ++next_sink;  // always: later chunks wait for this turn
    }
  };
  const size_t workers = std::min(kParallelCalls, chunks.size());
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(worker);
  if (workers > 0) worker();
  for (std::thread& th : threads) th.join();
  return failed;
}

int PartOfId(absl::Span<const int64_t> offsets, int64_t id) {
  return static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), id) -
                          offsets.begin()) -
         1;
}

absl::StatusOr<std::string> GatherRowsById(const ServerMetadata& metadata, int type,
                                           FeatureDtype dtype, const ClientOf& client_of,
                                           absl::Span<const int64_t> ids, int64_t rows_per_call,
                                           const RowRoute& route) {
  ASSIGN_OR_RETURN(const NodeTypeInfo* t, TypeWithOffsets(metadata, type));
  std::string out(ids.size() * static_cast<size_t>(t->feat_dim * FeatureBytes(dtype)), '\0');
  RETURN_IF_ERROR(GatherRowsByIdInto(metadata, type, dtype, client_of, ids, rows_per_call, route,
                                     absl::MakeSpan(out)));
  return out;
}

absl::Status GatherRowsByIdInto(const ServerMetadata& metadata, int type, FeatureDtype dtype,
                                const ClientOf& client_of, absl::Span<const int64_t> ids,
                                int64_t rows_per_call, const RowRoute& route,
                                absl::Span<char> out) {
  ASSIGN_OR_RETURN(const NodeTypeInfo* t, TypeWithOffsets(metadata, type));
  const size_t row_bytes = static_cast<size_t>(t->feat_dim * FeatureBytes(dtype));
  if (out.size() != ids.size() * row_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("rows of ", ids.size(), " '", t->name,
                                                   "' ids need ", ids.size() * row_bytes,
                                                   " bytes, not ", out.size()));
  }
  if (t->feat_dim == 0 || ids.empty()) return absl::OkStatus();
  for (const int64_t id : ids) {
    if (id < 0 || id >= t->num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", t->name, "' id ", id, " is outside [0, ", t->num_nodes, ")"));
    }
  }
  const size_t per_call = static_cast<size_t>(std::max<int64_t>(rows_per_call, 1));
  struct Call {
    int part;
    size_t begin, end;  // positions in `order`
  };
  std::vector<Call> calls;
  std::vector<size_t> order(ids.size());
  const bool through_gateways = !route.gateway_parts.empty();
  GatherRowsOptions options{.any_part = through_gateways, .client_host_id = route.client_host_id};
  if (through_gateways) {
    // In the given order, chunk c to gateway c mod the gateways.
    std::iota(order.begin(), order.end(), size_t{0});
    for (size_t begin = 0; begin < ids.size(); begin += per_call) {
      calls.push_back({route.gateway_parts[calls.size() % route.gateway_parts.size()], begin,
                       std::min(begin + per_call, ids.size())});
    }
  } else {
    // Positions of `ids` grouped by part (a counting sort: parts are few).
    std::vector<int> part_of(ids.size());
    std::vector<size_t> count(static_cast<size_t>(metadata.num_parts) + 1, 0);
    for (size_t i = 0; i < ids.size(); ++i) {
      part_of[i] = PartOfId(t->part_offsets, ids[i]);
      ++count[static_cast<size_t>(part_of[i]) + 1];
    }
    for (size_t p = 1; p < count.size(); ++p) count[p] += count[p - 1];
    std::vector<size_t> next(count.begin(), count.end() - 1);
    for (size_t i = 0; i < ids.size(); ++i) order[next[static_cast<size_t>(part_of[i])]++] = i;
    for (int p = 0; p < metadata.num_parts; ++p) {
      for (size_t begin = count[static_cast<size_t>(p)]; begin < count[static_cast<size_t>(p) + 1];
           begin += per_call) {
        calls.push_back({p, begin, std::min(begin + per_call, count[static_cast<size_t>(p) + 1])});
      }
    }
  }
  // Up to route.parallel_calls calls in flight (every part's server at once, and a server's calls
  // side by side): one call at a time moved ~270 MB/s on the GPU machine.
  std::atomic<size_t> next_call{0};
  absl::Mutex mu;
  absl::Status first_error;
  const auto work = [&] {
    std::vector<int64_t> batch;
    for (size_t c = next_call++; c < calls.size(); c = next_call++) {
      {
        absl::MutexLock lock(&mu);
        if (!first_error.ok()) return;
      }
      const Call& call = calls[c];
      batch.clear();
      for (size_t k = call.begin; k < call.end; ++k) batch.push_back(ids[order[k]]);
      absl::StatusOr<std::string> rows =
          GatherFromPart(*t, call.part, dtype, client_of, batch, options);
      if (!rows.ok()) {
        absl::MutexLock lock(&mu);
        if (first_error.ok()) first_error = rows.status();
        return;
      }
      if (through_gateways) {  // answered in the asked order
        std::memcpy(out.data() + call.begin * row_bytes, rows->data(),
                    (call.end - call.begin) * row_bytes);
        continue;
      }
      for (size_t k = call.begin; k < call.end; ++k) {
        std::memcpy(out.data() + order[k] * row_bytes,
                    rows->data() + (k - call.begin) * row_bytes, row_bytes);
      }
    }
  };
  std::vector<std::thread> helpers;
  const size_t parallel = static_cast<size_t>(std::max(route.parallel_calls, 1));
  for (size_t h = 1; h < std::min(calls.size(), parallel); ++h) helpers.emplace_back(work);
  work();
  for (std::thread& h : helpers) h.join();
  return first_error;
}

int64_t FeatureTableBytes(const ServerMetadata& metadata, FeatureDtype dtype) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t total = 0;
  for (const NodeTypeInfo& t : metadata.node_types) {
    int64_t rows_bytes = 0;
    if (__builtin_mul_overflow(t.num_nodes, t.feat_dim, &rows_bytes) ||
        __builtin_mul_overflow(rows_bytes, FeatureBytes(dtype), &rows_bytes) ||
        __builtin_add_overflow(total, rows_bytes, &total)) {
      return kMax;
    }
  }
  return total;
}

}  // namespace graphshard::client
