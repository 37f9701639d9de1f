// The tiered store's remote tier alone (client::GatherRowsById, trainer/feature_store.h): rows
// of uniformly random ids fetched in batches, as a trainer's input pipeline asks them, through
// the host's servers (RowRoute::gateway_parts, any_part, shared memory) and from their owners
// directly, each against memcpy of the same bytes measured in this run (JSON lines; run by
// tests/bench/remote_rows_bench.sh).
//
//   remote_rows_bench --servers H:P,H:P [--rows 180000] [--batches 20] [--per-call 8192]
//                     [--parallel 8[,16,...]]   (calls in flight; each value measured)

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "client/feature_rows.h"
#include "client/server_set.h"
#include "shm/ring.h"
#include "tests/bench/bench_util.h"

namespace graphshard::bench {
namespace {

struct Flags {
  std::vector<std::string> servers;
  int64_t rows = 180000;  // a products-shaped batch's remote rows at a 10% device tier
  int batches = 20;
  int64_t per_call = 8192;
  std::vector<int> parallel = {8};  // calls in flight, each value measured
};

bool Parse(int argc, char** argv, Flags* f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--servers") {
      f->servers = absl::StrSplit(v, ',', absl::SkipEmpty());
    } else if (k == "--rows") {
      if (!absl::SimpleAtoi(v, &f->rows) || f->rows < 1) return false;
    } else if (k == "--batches") {
      if (!absl::SimpleAtoi(v, &f->batches) || f->batches < 1) return false;
    } else if (k == "--parallel") {
      if (!ParseCounts(v, &f->parallel)) return false;
    } else if (k == "--per-call") {
      if (!absl::SimpleAtoi(v, &f->per_call) || f->per_call < 1) return false;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !f->servers.empty();
}

int Run(const Flags& f) {
  client::DiscoveryOptions o;
  o.servers = f.servers;
  o.server_wait_s = 30;
  absl::StatusOr<client::ServerSet> set = client::ConnectServers(o);
  if (!set.ok()) {
    std::fprintf(stderr, "remote_rows_bench: %s\n", set.status().ToString().c_str());
    return 1;
  }
  const client::ServerMetadata& md = set->metadata;
  const client::ClientOf client_of = [&](int part) -> absl::StatusOr<client::PartitionClient*> {
    return set->clients[static_cast<size_t>(part)];
  };
  const int64_t n = md.node_types[0].num_nodes;
  const double row_bytes = static_cast<double>(md.node_types[0].feat_dim) * 4;
  std::mt19937_64 random(7);
  std::vector<std::vector<int64_t>> batches(static_cast<size_t>(f.batches));
  for (auto& b : batches) {
    b.resize(static_cast<size_t>(f.rows));
    for (int64_t& id : b) id = static_cast<int64_t>(random() % static_cast<uint64_t>(n));
  }
  const double bytes = row_bytes * static_cast<double>(f.rows);
  const double memcpy_gbs = MemcpyBytesPerSecond(static_cast<size_t>(bytes), 5) / 1e9;
  std::vector<int> all_parts;
  for (int p = 0; p < md.num_parts; ++p) all_parts.push_back(p);
  struct Route {
    std::string name;
    client::RowRoute route;
  };
  std::vector<Route> routes;
  for (const int p : f.parallel) {
    const std::string x = f.parallel.size() > 1 ? "_x" + std::to_string(p) : "";
    routes.push_back(
        {"host_servers_shm" + x,
         {.gateway_parts = all_parts, .client_host_id = shm::HostId(), .parallel_calls = p}});
    routes.push_back({"host_servers_inline" + x,
                      {.gateway_parts = all_parts, .client_host_id = "", .parallel_calls = p}});
    routes.push_back(
        {"owners_inline" + x, {.gateway_parts = {}, .client_host_id = "", .parallel_calls = p}});
  }
  for (const Route& r : routes) {
    // One warm-up batch, then the timed ones.
    if (!client::GatherRowsById(md, 0, client::FeatureDtype::kFloat32, client_of, batches[0],
                                f.per_call, r.route)
             .ok()) {
      std::fprintf(stderr, "remote_rows_bench: %s failed\n", r.name.c_str());
      return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    for (const auto& b : batches) {
      absl::StatusOr<std::string> rows = client::GatherRowsById(
          md, 0, client::FeatureDtype::kFloat32, client_of, b, f.per_call, r.route);
      if (!rows.ok()) {
        std::fprintf(stderr, "remote_rows_bench: %s\n", rows.status().ToString().c_str());
        return 1;
      }
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double gbs = bytes * f.batches / s / 1e9;
    std::printf(
        "{\"name\": \"remote_rows_%s\", \"value\": %.3f, \"unit\": \"GB/s\", \"baseline\": %.3f, "
        "\"baseline_name\": \"memcpy_GB/s\", \"ratio\": %.4f, \"ms_per_batch\": %.2f, "
        "\"rows_per_batch\": %lld, \"per_call\": %lld}\n",
        r.name.c_str(), gbs, memcpy_gbs, gbs / memcpy_gbs, 1e3 * s / f.batches,
        static_cast<long long>(f.rows), static_cast<long long>(f.per_call));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace graphshard::bench

int main(int argc, char** argv) {
  graphshard::bench::Flags f;
  if (!graphshard::bench::Parse(argc, argv, &f)) {
    std::fprintf(stderr,
                 "usage: remote_rows_bench --servers H:P,H:P [--rows 180000] [--batches 20] "
                 "[--per-call 8192] [--parallel 8[,16,...]]\n");
    return 2;
  }
  return graphshard::bench::Run(f);
}
