#include "client/graph_topology.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"

namespace graphshard::client {
namespace {

// Part `part`'s in-edges of destinations [begin, end): counts per node and their sources.
absl::Status ReadPart(const ServerMetadata& md, const ClientOf& client_of, int part, int64_t begin,
                      int64_t end, int64_t nodes_per_call, std::atomic<int64_t>& nodes_done,
                      std::vector<int64_t>& counts, std::vector<int32_t>& sources) {
  const std::string& edge_type = md.edge_types[0].name;
  const int64_t num_nodes = md.node_types[0].num_nodes;
  std::vector<int64_t> ids;
  int64_t chunk = std::max<int64_t>(nodes_per_call, 1);
  for (int64_t first = begin; first < end;) {
    const int64_t last = std::min(end, first + chunk);
    ids.resize(static_cast<size_t>(last - first));
    for (int64_t v = first; v < last; ++v) ids[static_cast<size_t>(v - first)] = v;
    absl::StatusOr<PartitionClient::InEdges> got = AskLivePart(
        client_of, part, [&](PartitionClient& c) { return c.AllInEdges(edge_type, ids); });
    if (absl::IsResourceExhausted(got.status()) && chunk > 1) {
      chunk = std::max<int64_t>(chunk / 2, 1);  // a hub: ask for fewer nodes at a time
      continue;
    }
    RETURN_IF_ERROR(got.status());
    // No reserve(size + n) here: an exact reserve each call reallocates and copies the whole
    // piece every call (quadratic: minutes at 3.2 B edges); push_back grows it geometrically.
    for (int64_t src : got->neighbors) {
      if (src < 0 || src >= num_nodes) {
        return absl::DataLossError(absl::StrCat("part ", part, " answered in-neighbour ", src,
                                                " outside the graph's ", num_nodes, " nodes"));
      }
      sources.push_back(static_cast<int32_t>(src));  // num_nodes < 2^31: checked before
    }
    counts.insert(counts.end(), got->counts.begin(), got->counts.end());
    nodes_done.fetch_add(last - first, std::memory_order_relaxed);
    first = last;
    chunk = std::min(chunk * 2, std::max<int64_t>(nodes_per_call, 1));  // past the hub
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GraphTopology> ReadTopology(const ServerMetadata& md, const ClientOf& client_of,
                                           int64_t nodes_per_call, int calls_in_flight,
                                           const TopologyProgress& progress) {
  if (md.node_types.size() != 1 || md.edge_types.size() != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the graph has ", md.node_types.size(), " node types and ", md.edge_types.size(),
        " edge types; reading its whole topology needs one of each (a homogeneous graph)"));
  }
  const std::vector<int64_t>& off = md.node_types[0].part_offsets;
  if (std::ssize(off) != md.num_parts + 1) {
    return absl::FailedPreconditionError(
        "the servers do not say which ids each part owns (Metadata part_offsets)");
  }
  if (md.node_types[0].num_nodes > std::numeric_limits<int32_t>::max()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the graph has ", md.node_types[0].num_nodes,
                     " nodes; its topology is read as int32 ids (fewer than 2^31 nodes)"));
  }
  // Each part's range cut in up to `calls_in_flight / parts` pieces of whole calls, one thread
  // each, so that a host with cores to spare reads on several (on two cores it is 1.0-1.5x of
  // one call at a time per part: tests/bench/topology_read_bench.sh).
  struct Piece {
    int part = 0;
    int64_t begin = 0, end = 0;
    std::vector<int64_t> counts;
    std::vector<int32_t> sources;
    absl::Status status;
  };
  const int64_t per_call = std::max<int64_t>(nodes_per_call, 1);
  const int64_t per_part = std::max<int64_t>(calls_in_flight / std::max(md.num_parts, 1), 1);
  std::vector<Piece> pieces;
  for (int p = 0; p < md.num_parts; ++p) {
    const int64_t begin = off[static_cast<size_t>(p)], end = off[static_cast<size_t>(p) + 1];
    if (end <= begin) continue;
    const int64_t calls = (end - begin + per_call - 1) / per_call;
    const int64_t cut = std::min(calls, per_part);
    const int64_t calls_per_piece = (calls + cut - 1) / cut;
    for (int64_t first = begin, last; first < end; first = last) {
      last = std::min(end, first + calls_per_piece * per_call);
      pieces.emplace_back();
      pieces.back().part = p;
      pieces.back().begin = first;
      pieces.back().end = last;
    }
  }
  {
    const absl::Time start = absl::Now();
    std::atomic<int64_t> nodes_done{0};
    std::atomic<size_t> reading{pieces.size()};
    absl::Notification all_read;  // by the last piece's thread
    if (pieces.empty()) all_read.Notify();
    std::vector<std::thread> threads;
    for (Piece& piece : pieces) {
      threads.emplace_back([&, per_call, mine = &piece] {
        mine->status = ReadPart(md, client_of, mine->part, mine->begin, mine->end, per_call,
                                nodes_done, mine->counts, mine->sources);
        if (reading.fetch_sub(1) == 1) all_read.Notify();
      });
    }
    const int64_t total = md.node_types[0].num_nodes;
    const absl::Duration every = std::max(progress.every, absl::Milliseconds(1));
    while (!all_read.WaitForNotificationWithTimeout(every)) {
      if (progress.report) progress.report(nodes_done.load(), total, absl::Now() - start);
    }
    for (std::thread& t : threads) t.join();
    if (progress.report) progress.report(nodes_done.load(), total, absl::Now() - start);
  }
  for (const Piece& piece : pieces) RETURN_IF_ERROR(piece.status);
  GraphTopology out;
  out.indptr.reserve(static_cast<size_t>(md.node_types[0].num_nodes) + 1);
  out.indptr.push_back(0);
  size_t edges = 0;
  for (const Piece& piece : pieces) edges += piece.sources.size();
  out.indices.reserve(edges);
  for (Piece& piece : pieces) {
    for (int64_t c : piece.counts) out.indptr.push_back(out.indptr.back() + c);
    out.indices.insert(out.indices.end(), piece.sources.begin(), piece.sources.end());
    std::vector<int32_t>().swap(piece.sources);  // freed as copied: peak ~ edges + 1 piece
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ReadLabels(const ServerMetadata& md, const ClientOf& client_of,
                                                absl::Span<const int64_t> ids, int64_t per_call) {
  const NodeTypeInfo& t = md.node_types[static_cast<size_t>(md.target)];
  if (std::ssize(t.part_offsets) != md.num_parts + 1) {
    return absl::FailedPreconditionError(
        "the servers do not say which ids each part owns (Metadata part_offsets)");
  }
  // Positions of the ids, grouped by owner.
  std::vector<std::vector<size_t>> of_part(static_cast<size_t>(md.num_parts));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= t.num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", ids[i], " is outside the ", t.num_nodes, " '", t.name, "' nodes"));
    }
    of_part[static_cast<size_t>(PartOfId(t.part_offsets, ids[i]))].push_back(i);
  }
  std::vector<int64_t> out(ids.size(), -1);
  std::vector<int64_t> asked;
  for (int p = 0; p < md.num_parts; ++p) {
    const std::vector<size_t>& pos = of_part[static_cast<size_t>(p)];
    const size_t step = static_cast<size_t>(std::max<int64_t>(per_call, 1));
    for (size_t first = 0; first < pos.size(); first += step) {
      const size_t last = std::min(pos.size(), first + step);
      asked.clear();
      for (size_t j = first; j < last; ++j) asked.push_back(ids[pos[j]]);
      ASSIGN_OR_RETURN(std::vector<int64_t> labels,
                       AskLivePart(client_of, p, [&](PartitionClient& c) {
                         return c.GatherLabels(t.name, asked);
                       }));
      for (size_t j = first; j < last; ++j) out[pos[j]] = labels[j - first];
    }
  }
  return out;
}

}  // namespace graphshard::client
