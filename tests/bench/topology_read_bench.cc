// Reading a homogeneous graph's whole topology from its servers (client::ReadTopology: what
// the trainer's GPU sampler does before its first batch) with one call in flight per part,
// the baseline, and with more, in the same run: seconds, edges per second and the speedup
// (JSON lines; run by tests/bench/topology_read_bench.sh).
//
//   topology_read_bench --servers H:P[,H:P...] [--in-flight 1,8] [--per-call 16384] [--rounds 2]

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "client/graph_topology.h"
#include "client/server_set.h"
#include "tests/bench/bench_util.h"

namespace graphshard::bench {
namespace {

struct Flags {
  std::vector<std::string> servers;
  std::vector<int> in_flight = {1, 8};  // the first is the baseline
  int64_t per_call = 1 << 14;
  int rounds = 2;  // each value read this many times, interleaved; the fastest counts
};

bool Parse(int argc, char** argv, Flags* f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--servers") {
      f->servers = absl::StrSplit(v, ',', absl::SkipEmpty());
    } else if (k == "--in-flight") {
      if (!ParseCounts(v, &f->in_flight)) return false;
    } else if (k == "--per-call") {
      if (!absl::SimpleAtoi(v, &f->per_call) || f->per_call < 1) return false;
    } else if (k == "--rounds") {
      if (!absl::SimpleAtoi(v, &f->rounds) || f->rounds < 1) return false;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !f->servers.empty();
}

int Run(const Flags& f) {
  client::DiscoveryOptions o;
  o.servers = f.servers;
  o.server_wait_s = 60;
  absl::StatusOr<client::ServerSet> set = client::ConnectServers(o);
  if (!set.ok()) {
    std::fprintf(stderr, "topology_read_bench: %s\n", set.status().ToString().c_str());
    return 1;
  }
  const client::ClientOf client_of = [&](int part) -> absl::StatusOr<client::PartitionClient*> {
    return set->clients[static_cast<size_t>(part)];
  };
  std::vector<double> best(f.in_flight.size(), 1e300);
  int64_t edges = 0;
  for (int round = 0; round < f.rounds; ++round) {
    for (size_t i = 0; i < f.in_flight.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<client::GraphTopology> t =
          client::ReadTopology(set->metadata, client_of, f.per_call, f.in_flight[i]);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!t.ok()) {
        std::fprintf(stderr, "topology_read_bench: %s\n", t.status().ToString().c_str());
        return 1;
      }
      edges = std::ssize(t->indices);
      best[i] = std::min(best[i], s);
    }
  }
  for (size_t i = 0; i < f.in_flight.size(); ++i) {
    std::printf(
        "{\"name\": \"topology_read_in_flight_%d\", \"value\": %.3f, \"unit\": \"s\", "
        "\"edges\": %lld, \"edges_per_s\": %.0f, \"parts\": %d, \"per_call\": %lld, "
        "\"baseline_name\": \"in_flight_%d_s\", \"baseline\": %.3f, \"speedup\": %.2f, "
        "\"rounds\": %d}\n",
        f.in_flight[i], best[i], static_cast<long long>(edges),
        static_cast<double>(edges) / best[i], set->metadata.num_parts,
        static_cast<long long>(f.per_call), f.in_flight[0], best[0], best[0] / best[i], f.rounds);
  }
  return 0;
}

}  // namespace
}  // namespace graphshard::bench

int main(int argc, char** argv) {
  graphshard::bench::Flags f;
  if (!graphshard::bench::Parse(argc, argv, &f)) {
    std::fprintf(stderr,
                 "usage: topology_read_bench --servers H:P[,H:P...] [--in-flight 1,8] "
                 "[--per-call 16384] [--rounds 2]\n");
    return 2;
  }
  return graphshard::bench::Run(f);
}
