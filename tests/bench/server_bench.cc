// Server throughput benchmark (streams, scaling). JSON lines on stdout; progress on stderr.
//   server_bench --partition DIR [--batches N] [--batch-size B] [--fanouts 15,10,5]
//                [--threads T] [--prefetch P] [--feature-dtype float32|float16]
//                [--peer-features rpc|local|rpc,local] [--clients 1,2,4,8]
//                [--shm-ring on|off|off,on] [--peer-sampling local|rpc|rpc,local]
//                [--warmup-batches W]
//   server_bench --partition DIR --cross-host MODES [--clients 1,2,4] [--feature-dtype float32,float16]
//                [--peer-cache-mib N] [...]   (tests/bench/cross_host.h)
// Measured in one run, each with the baseline it is compared to:
//   memcpy and raw TCP loopback bandwidth (baselines);
//   sampling in-process (LocalParts wired directly, no RPC);
//   then, for each --shm-ring and --peer-features mode (servers restarted per mode; "rpc":
//   peers' feature rows through GatherFeatures, "local": same-host peers' rows read from their
//   mmap'ed parts; ring on (default): clients read reused ring segments, off ("_noring"): one
//   new segment per batch; --peer-sampling local (default): same-host peers' parts sampled
//   in-process, rpc ("_rpcsampling"): through SampleOneHop):
//     without --clients: one stream over gRPC loopback (bytes inline) and over the same-host
//     shared-memory path; 2 servers with 2 concurrent streaming clients (the throughput target);
//     with --clients: the scaling section: n concurrent shared-memory streaming
//     clients (client c reads from server c mod K, the part's training seeds split evenly among
//     its clients, --batches each), aggregate batches/s and seeds/s against 1 client, and the
//     servers' CPU utilisation: (process CPU time from getrusage(RUSAGE_SELF) minus the client
//     threads' own CPU time) / wall time / cores. With --warmup-batches W (ring on), each
//     client first streams W batches untimed and keeps its ring reader (shm_ring_id) for the
//     timed stream, as a trainer's epochs after the first: no segment is made in the timed part.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/partition_part.h"
#include "common/thread_usage.h"
#include "rpc/channel.h"
#include "server/engine/in_process_peers.h"
#include "server/engine/minibatch_builder.h"
#include "server/malloc_tuning.h"
#include "server/partition_server.h"
#include "server/proto_convert.h"
#include "shm/ring.h"
#include "tests/bench/bench_util.h"
#include "tests/bench/cross_host.h"
#include "tests/bench/stream_client.h"

namespace graphshard::bench {
namespace {

struct Flags {
  std::string partition;
  int batches = 20;
  int batch_size = 1024;
  std::vector<int32_t> fanouts = {15, 10, 5};
  int threads = UsableCores();
  int prefetch = 4;
  int warmup = 0;  // --warmup-batches: scaling clients first stream this many (ring kept)
  v1::FeatureDtype dtype = v1::FLOAT32;
  std::vector<server::PeerFeatures> peer_features = {server::PeerFeatures::kLocal};
  std::vector<int> clients;  // non-empty: the scaling section instead of the 1-stream/2x2 runs
  std::vector<bool> shm_ring = {true};  // clients read ring segments (reused) or one-shot ones
  std::vector<bool> local_sampling = {true};  // same-host peers sampled in-process, or by RPC
  bool ring = true;  // the current mode's (Run sets it)
  CrossHostFlags cross;  // --cross-host or --attach: the cross-host section instead
  bool cross_host = false;
};

const char* ModeName(server::PeerFeatures m) {
  return m == server::PeerFeatures::kRpc ? "rpc" : "local";
}

// One server configuration of a run: how peers' feature rows are read, and whether the clients
// read ring segments ("local", "rpc") or one-shot segments ("local_noring", "rpc_noring").
// Same-host peers sampled by RPC (--peer-sampling rpc) add "_rpcsampling".
struct Mode {
  server::PeerFeatures peer = server::PeerFeatures::kLocal;
  bool ring = true;
  bool local_sampling = true;
  std::string Name() const {
    return std::string(ModeName(peer)) + (ring ? "" : "_noring") +
           (local_sampling ? "" : "_rpcsampling");
  }
};

void Report(const std::string& name, const Totals& t, double secs, double baseline_bps,
            const std::string& baseline_name) {
  PrintResult(name + "_batches_per_s", t.batches / secs, "batches/s");
  PrintResult(name + "_seeds_per_s", t.seeds / secs, "seeds/s");
  PrintResult(name + "_edges_per_s", t.edges / secs, "edges/s");
  PrintCompared(name + "_feature_bytes_per_s", t.feature_bytes / secs, "B/s", baseline_name,
                baseline_bps);
}

// In-process: `threads` workers build batches over part 0's training seeds.
Totals InProcess(const Flags& f, const engine::LocalPart& local, engine::Peers& peers,
                 const std::vector<int64_t>& seeds, double* secs) {
  std::vector<Totals> per(f.threads);
  std::atomic<int> next{0};
  double t0 = Now();
  std::vector<std::thread> workers;
  for (int w = 0; w < f.threads; ++w) {
    workers.emplace_back([&, w] {
      for (int b = next++; b < f.batches; b = next++) {
        engine::MinibatchRequest r;
        size_t begin = (static_cast<size_t>(b) * f.batch_size) % seeds.size();
        for (int i = 0; i < f.batch_size && begin + i < seeds.size(); ++i) r.seeds.push_back(seeds[begin + i]);
        r.sampling.fanouts = f.fanouts;
        r.sampling.feature_dtype = f.dtype == v1::FLOAT16 ? engine::FeatureDtype::kFloat16
                                                          : engine::FeatureDtype::kFloat32;
        r.seed = static_cast<uint64_t>(b);
        auto batch = engine::BuildMinibatch(local, peers, r);
        if (!batch.ok()) {
          std::fprintf(stderr, "in-process: %s\n", std::string(batch.status().message()).c_str());
          return;
        }
        per[w].batches++;
        per[w].seeds += batch->batch_size;
        per[w].edges += batch->NumSampledEdges();
        for (const auto& n : batch->nodes) per[w].feature_bytes += static_cast<int64_t>(n.features.size());
      }
    });
  }
  for (auto& t : workers) t.join();
  *secs = Now() - t0;
  Totals all;
  for (const Totals& t : per) all.Add(t);
  return all;
}

StreamParams Params(const Flags& f) {
  return {.batches = f.batches, .batch_size = f.batch_size, .fanouts = f.fanouts, .dtype = f.dtype,
          .ring = f.ring};
}

Totals StreamOnce(const Flags& f, const std::string& address, const std::vector<int64_t>& seeds,
                  bool shm, uint64_t shuffle_seed, int num_batches = 0,
                  ClientRing* client = nullptr) {
  return bench::StreamOnce(Params(f), address, seeds, shm, shuffle_seed, num_batches, client);
}

// The stream runs: one stream inline and through shared memory, then 2 servers x 2 clients.
void SingleAndPairStreams(const Flags& f,
                          const std::vector<std::unique_ptr<server::PartitionServer>>& servers,
                          const std::vector<std::vector<int64_t>>& train, const std::string& prefix,
                          double memcpy_bps, double tcp_bps, double base_bps) {
  for (bool shm : {false, true}) {
    double t0 = Now();
    Totals t = StreamOnce(f, servers[0]->address(), train[0], shm, 1);
    double dt = Now() - t0;
    std::string name = prefix + (shm ? "grpc_shm_1stream" : "grpc_inline_1stream");
    Report(name, t, dt, shm ? memcpy_bps : tcp_bps, shm ? "memcpy" : "tcp_loopback");
    PrintCompared(name + "_vs_inprocess", t.batches / dt, "batches/s", "inprocess_batches_per_s", base_bps);
  }
  const int clients = std::min(static_cast<int>(servers.size()), 2);
  std::vector<Totals> got(clients);
  double t0 = Now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] { got[c] = StreamOnce(f, servers[c]->address(), train[c], true, 2 + c); });
  }
  for (auto& t : threads) t.join();
  double dt = Now() - t0;
  Totals all;
  for (const Totals& t : got) all.Add(t);
  std::string name = prefix + "grpc_shm_" + std::to_string(clients) + "servers_" +
                     std::to_string(clients) + "clients";
  Report(name, all, dt, memcpy_bps, "memcpy");
  PrintCompared(name + "_vs_inprocess", all.batches / dt, "batches/s", "inprocess_batches_per_s", base_bps);
}

// The servers' Stats.stream_* (where streamed batches' time goes), summed over servers.
struct StreamTimes {
  std::map<std::string, common::ThreadUsage> phases;  // sample, gather, finish
  double wait_build = 0, wait_ring = 0, write = 0;
  int64_t batches = 0;
  StreamTimes operator-(const StreamTimes& o) const {
    StreamTimes d = *this;
    for (auto& [name, u] : d.phases) {
      auto it = o.phases.find(name);
      if (it != o.phases.end()) u -= it->second;
    }
    d.wait_build -= o.wait_build, d.wait_ring -= o.wait_ring, d.write -= o.write;
    d.batches -= o.batches;
    return d;
  }
};

std::optional<v1::Stats> StatsOf(const server::PartitionServer& s) { return StatsAt(s.address()); }

StreamTimes SumStreamTimes(const std::vector<std::unique_ptr<server::PartitionServer>>& servers) {
  StreamTimes t;
  for (const auto& s : servers) {
    std::optional<v1::Stats> got = StatsOf(*s);
    if (!got.has_value()) continue;
    const v1::Stats& st = *got;
    for (const v1::BuildPhaseStats& p : st.stream_build()) {
      t.phases[p.phase()] += common::ThreadUsage{.wall_s = p.wall_s(), .user_s = p.user_s(),
                                                 .sys_s = p.sys_s(),
                                                 .minor_faults = p.minor_faults()};
    }
    t.wait_build += st.stream_wait_build_s();
    t.wait_ring += st.stream_wait_ring_s();
    t.write += st.stream_write_s();
    t.batches += st.batches_built();
  }
  return t;
}

// Per streamed batch: each build phase's wall, CPU (user + system) and system ms and minor
// page faults, the writers' waits (ms); and how many batches were being built at once on
// average (build wall time / the run's wall time).
void PrintStreamTimes(const std::string& name, const StreamTimes& t, double wall_s) {
  if (t.batches <= 0) return;
  const double per = 1.0 / static_cast<double>(t.batches);
  double build_wall = 0;
  for (const auto& [phase, u] : t.phases) {
    const std::string p = name + "_" + phase;
    PrintResult(p + "_wall_ms", 1e3 * u.wall_s * per, "ms/batch");
    PrintResult(p + "_cpu_ms", 1e3 * (u.user_s + u.sys_s) * per, "ms/batch");
    PrintResult(p + "_sys_ms", 1e3 * u.sys_s * per, "ms/batch");
    PrintResult(p + "_minor_faults", static_cast<double>(u.minor_faults) * per, "faults/batch");
    build_wall += u.wall_s;
  }
  PrintResult(name + "_writer_wait_build_ms", 1e3 * t.wait_build * per, "ms/batch");
  PrintResult(name + "_writer_wait_ring_ms", 1e3 * t.wait_ring * per, "ms/batch");
  PrintResult(name + "_writer_write_ms", 1e3 * t.write * per, "ms/batch");
  PrintResult(name + "_batches_building", build_wall / wall_s, "batches");
}

// The scaling section; returns aggregate batches/s per entry of f.clients.
std::vector<double> Scaling(const Flags& f,
                            const std::vector<std::unique_ptr<server::PartitionServer>>& servers,
                            const std::vector<std::vector<int64_t>>& train, const std::string& mode,
                            double memcpy_bps) {
  const int k = static_cast<int>(servers.size());
  const double cores = UsableCores();  // the affinity mask's (taskset), else all
  // Warm-up, not timed: every server builds a few batches (maps same-host peers' parts, faults
  // the pages in) so that the first client count does not pay for it.
  {
    std::vector<std::thread> threads;
    for (int p = 0; p < k; ++p) {
      threads.emplace_back([&, p] { StreamOnce(f, servers[p]->address(), train[p], true, 99, 4); });
    }
    for (auto& t : threads) t.join();
  }
  std::vector<double> out;
  double one_bps = 0, one_sps = 0;
  for (int n : f.clients) {
    // Client c reads from server c mod k; a server's training seeds are split evenly among the
    // clients it serves (docs/DESIGN.md, "Which trainer reads from which server").
    std::vector<std::vector<int64_t>> shards(n);
    for (int c = 0; c < n; ++c) {
      const int p = c % k;
      const int of = (n - p + k - 1) / k, index = c / k;
      const size_t begin = train[p].size() * index / of, end = train[p].size() * (index + 1) / of;
      shards[c].assign(train[p].begin() + static_cast<std::ptrdiff_t>(begin),
                       train[p].begin() + static_cast<std::ptrdiff_t>(end));
    }
    std::vector<Totals> got(n);
    // With --warmup-batches: every client first streams that many batches (untimed), then its
    // timed stream is served from the same ring, as a trainer's epochs after the first are.
    std::vector<ClientRing> rings(n);
    const bool warm = f.warmup > 0 && f.ring;
    if (warm) {
      std::vector<std::thread> warmers;
      for (int c = 0; c < n; ++c) {
        warmers.emplace_back([&, c] {
          StreamOnce(f, servers[c % k]->address(), shards[c], true, 5000 + c, f.warmup, &rings[c]);
        });
      }
      for (auto& t : warmers) t.join();
    }
    const StreamTimes times0 = SumStreamTimes(servers);
    const double cpu0 = ProcessCpuSeconds(), t0 = Now();
    std::vector<std::thread> threads;
    for (int c = 0; c < n; ++c) {
      threads.emplace_back([&, c] {
        got[c] = StreamOnce(f, servers[c % k]->address(), shards[c], true, 10 + c, 0,
                            warm ? &rings[c] : nullptr);
      });
    }
    for (auto& t : threads) t.join();
    const double dt = Now() - t0, cpu = ProcessCpuSeconds() - cpu0;
    Totals all;
    for (const Totals& t : got) all.Add(t);
    const std::string name = "scaling_" + mode + "_" + std::to_string(n) + "clients";
    const double bps = all.batches / dt, sps = all.seeds / dt;
    if (out.empty()) one_bps = bps, one_sps = sps;
    const std::string first = "scaling_" + mode + "_" + std::to_string(f.clients[0]) + "clients";
    PrintCompared(name + "_batches_per_s", bps, "batches/s", first + "_batches_per_s", one_bps);
    PrintCompared(name + "_seeds_per_s", sps, "seeds/s", first + "_seeds_per_s", one_sps);
    PrintCompared(name + "_feature_bytes_per_s", all.feature_bytes / dt, "B/s", "memcpy", memcpy_bps);
    PrintResult(name + "_server_cpu_util", (cpu - all.client_cpu_s) / dt / cores, "fraction_of_cores");
    PrintResult(name + "_process_cpu_util", cpu / dt / cores, "fraction_of_cores");
    PrintResult(name + "_batches", static_cast<double>(all.batches), "batches");
    PrintStreamTimes(name, SumStreamTimes(servers) - times0, dt);
    std::fprintf(stderr, "  %s: %lld batches in %.2f s, process CPU %.1f s, client threads %.1f s\n",
                 name.c_str(), static_cast<long long>(all.batches), dt, cpu, all.client_cpu_s);
    out.push_back(bps);
  }
  return out;
}

// Per-RPC latency of every server (stderr; GatherFeatures and SampleOneHop p50/p99 also as JSON).
void PrintServerStats(const std::vector<std::unique_ptr<server::PartitionServer>>& servers,
                      const std::string& prefix) {
  int64_t peer_bytes = 0, peer_wire = 0;
  for (size_t p = 0; p < servers.size(); ++p) {
    const auto& s = servers[p];
    std::optional<v1::Stats> got = StatsOf(*s);
    if (!got.has_value()) continue;
    const v1::Stats& stats = *got;
    for (const auto& rpc : stats.rpcs()) {
      std::fprintf(stderr, "  %s %s: %lld calls, p50 %.2f ms, p99 %.2f ms\n", s->address().c_str(),
                   rpc.method().c_str(), static_cast<long long>(rpc.count()), rpc.p50_ms(), rpc.p99_ms());
      if (rpc.method() == "GatherFeatures" || rpc.method() == "SampleOneHop" ||
          rpc.method() == "bulk/GatherFeatures" || rpc.method() == "bulk/SampleOneHop") {
        std::string method = rpc.method();
        if (method.starts_with("bulk/")) method = "bulk_" + method.substr(5);
        const std::string name = prefix + "part" + std::to_string(p) + "_" + method;
        PrintResult(name + "_calls", static_cast<double>(rpc.count()), "calls");
        PrintResult(name + "_p50_ms", rpc.p50_ms(), "ms");
      }
    }
    peer_bytes += stats.bytes_sent() - stats.shm_bytes();
    peer_wire += stats.peer_wire_bytes_sent() + stats.peer_wire_bytes_received();
  }
  PrintResult(prefix + "servers_bytes_over_grpc_total", static_cast<double>(peer_bytes), "B");  // peer answers + inline batches
  // Requests to peers and their answers over connections (not shared memory), as the askers count.
  PrintResult(prefix + "servers_peer_wire_bytes_total", static_cast<double>(peer_wire), "B");
}

int Run(const Flags& f) {
  PrintResult("cores", UsableCores(), "cores");
  const double memcpy_bps = MemcpyBytesPerSecond(size_t{256} << 20, 5);
  PrintResult("memcpy_bytes_per_s", memcpy_bps, "B/s");
  const double tcp_bps = TcpLoopbackBytesPerSecond(size_t{2} << 30);
  PrintResult("tcp_loopback_bytes_per_s", tcp_bps, "B/s");

  auto manifest = common::ReadManifest(f.partition);
  if (!manifest.ok()) {
    std::fprintf(stderr, "%s\n", std::string(manifest.status().message()).c_str());
    return 1;
  }
  const int k = manifest->num_parts;
  std::vector<std::unique_ptr<engine::LocalPart>> locals;
  std::vector<const engine::LocalPart*> views;
  for (int p = 0; p < k; ++p) {
    auto part = common::PartitionPart::Load(f.partition, p, {.verify_checksums = false});
    if (!part.ok()) {
      std::fprintf(stderr, "%s\n", std::string(part.status().message()).c_str());
      return 1;
    }
    locals.push_back(*engine::LocalPart::Create(*std::move(part), engine::Limits{}));
    views.push_back(locals.back().get());
  }
  std::vector<std::vector<int64_t>> train(k);
  for (int p = 0; p < k; ++p) {
    auto s = locals[p]->node_types()[locals[p]->target_type()].shard->splits.at("train");
    train[p].assign(s.begin(), s.end());
  }
  std::fprintf(stderr, "bench: %d parts, %zu train seeds in part 0, %d threads\n", k,
               train[0].size(), f.threads);

  engine::InProcessPeers in_process(views);
  double secs = 0;
  Totals base = InProcess(f, *locals[0], in_process, train[0], &secs);
  const double base_bps = base.batches / secs;
  Report("inprocess", base, secs, memcpy_bps, "memcpy");
  PrintResult("avg_nodes_edges_per_batch_edges", static_cast<double>(base.edges) / base.batches, "edges");
  locals.clear();  // the servers below load their own parts

  std::vector<Mode> modes;
  for (bool sampling : f.local_sampling) {
    for (bool ring : f.shm_ring) {
      for (server::PeerFeatures peer : f.peer_features) modes.push_back({peer, ring, sampling});
    }
  }
  std::vector<std::vector<double>> scaling(modes.size());  // batches/s per client count
  for (size_t m = 0; m < modes.size(); ++m) {
    Flags fm = f;
    fm.ring = modes[m].ring;
    const std::string prefix = modes.size() > 1 ? "peer_" + modes[m].Name() + "_" : "";
    std::string registry = std::filesystem::temp_directory_path() /
                           ("gs-bench-" + std::to_string(::getpid()) + "-" + std::to_string(m));
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    for (int p = 0; p < k; ++p) {
      server::ServerOptions so;
      so.partition_dir = f.partition;
      so.part = p;
      so.registry_dir = registry;
      so.threads = f.threads;
      so.service.prefetch = f.prefetch;
      so.rpc_timeout = absl::Seconds(120);
      so.peer_features = modes[m].peer;
      so.peer_sampling = modes[m].local_sampling ? server::PeerSampling::kLocal
                                                 : server::PeerSampling::kRpc;
      auto s = server::PartitionServer::Start(so);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", std::string(s.status().message()).c_str());
        return 1;
      }
      servers.push_back(*std::move(s));
    }
    std::fprintf(stderr, "bench: peer features %s, %s segments, peers sampled %s\n",
                 ModeName(modes[m].peer), modes[m].ring ? "ring" : "one-shot",
                 modes[m].local_sampling ? "in-process" : "by RPC");
    if (f.clients.empty()) {
      SingleAndPairStreams(fm, servers, train, prefix, memcpy_bps, tcp_bps, base_bps);
    } else {
      scaling[m] = Scaling(fm, servers, train, modes[m].Name(), memcpy_bps);
    }
    PrintServerStats(servers, prefix);
    for (auto& s : servers) s->Shutdown(absl::Seconds(5));
    std::filesystem::remove_all(registry);
  }
  // The same client counts, "local" against "rpc", and ring against one-shot segments (all
  // measured above in this process).
  auto compare = [&](const std::string& label, auto pick, auto against) {
    for (size_t m = 0; m < modes.size(); ++m) {
      if (!pick(modes[m])) continue;
      for (size_t r = 0; r < modes.size(); ++r) {
        if (!against(modes[m], modes[r])) continue;
        for (size_t i = 0; i < f.clients.size() && i < scaling[m].size() && i < scaling[r].size(); ++i) {
          const std::string n = std::to_string(f.clients[i]);
          PrintCompared(label + modes[m].Name() + "_" + n + "clients_batches_per_s", scaling[m][i],
                        "batches/s", "scaling_" + modes[r].Name() + "_" + n + "clients_batches_per_s",
                        scaling[r][i]);
        }
      }
    }
  };
  compare("peer_vs_rpc_", [](const Mode& a) { return a.peer == server::PeerFeatures::kLocal; },
          [](const Mode& a, const Mode& b) {
            return b.peer == server::PeerFeatures::kRpc && b.ring == a.ring &&
                   b.local_sampling == a.local_sampling;
          });
  compare("ring_vs_noring_", [](const Mode& a) { return a.ring; },
          [](const Mode& a, const Mode& b) {
            return !b.ring && b.peer == a.peer && b.local_sampling == a.local_sampling;
          });
  compare("local_vs_rpc_sampling_", [](const Mode& a) { return a.local_sampling; },
          [](const Mode& a, const Mode& b) {
            return !b.local_sampling && b.peer == a.peer && b.ring == a.ring;
          });
  return 0;
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--partition") f->partition = v;
    else if (k == "--batches" && absl::SimpleAtoi(v, &f->batches)) {}
    else if (k == "--batch-size" && absl::SimpleAtoi(v, &f->batch_size)) {}
    else if (k == "--threads" && absl::SimpleAtoi(v, &f->threads)) {}
    else if (k == "--prefetch" && absl::SimpleAtoi(v, &f->prefetch)) {}
    else if (k == "--warmup-batches" && absl::SimpleAtoi(v, &f->warmup)) {}
    else if (k == "--feature-dtype") {
      f->cross.dtypes.clear();
      for (absl::string_view x : absl::StrSplit(v, ',')) {
        if (x != "float32" && x != "float16") return false;
        f->cross.dtypes.push_back(x == "float16" ? v1::FLOAT16 : v1::FLOAT32);
      }
      f->dtype = f->cross.dtypes[0];  // the other sections: the first
    } else if (k == "--cross-host") {
      f->cross_host = true;
      f->cross.modes = absl::StrSplit(v, ',');
    } else if (k == "--peer-cache-mib" && absl::SimpleAtoi(v, &f->cross.cache_mib)) {
    } else if (k == "--attach") {
      f->cross_host = true;
      f->cross.attach = absl::StrSplit(v, ',');
    } else if (k == "--client-parts" || k == "--server-pids") {
      std::vector<int>& list = k == "--client-parts" ? f->cross.client_parts : f->cross.server_pids;
      for (absl::string_view x : absl::StrSplit(v, ',')) {
        int n = 0;
        if (!absl::SimpleAtoi(x, &n) || n < 0) return false;
        list.push_back(n);
      }
    } else if (k == "--attach-name") f->cross.attach_name = v;
    else if (k == "--net-dev") f->cross.net_dev = v;
    else if (k == "--link-gbit" && absl::SimpleAtod(v, &f->cross.link_gbit)) {}
    else if (k == "--barrier") {
      std::vector<std::string> d = absl::StrSplit(v, ':');
      if (d.size() != 2 || !absl::SimpleAtoi(d[1], &f->cross.barrier_count)) return false;
      f->cross.barrier_dir = d[0];
    }
    else if (k == "--peer-features") {
      f->peer_features.clear();
      for (absl::string_view x : absl::StrSplit(v, ',')) {
        if (x != "rpc" && x != "local") return false;
        f->peer_features.push_back(x == "rpc" ? server::PeerFeatures::kRpc : server::PeerFeatures::kLocal);
      }
    } else if (k == "--clients") {
      f->clients.clear();
      for (absl::string_view x : absl::StrSplit(v, ',')) {
        int n = 0;
        if (!absl::SimpleAtoi(x, &n) || n < 1) return false;
        f->clients.push_back(n);
      }
    } else if (k == "--peer-sampling") {
      f->local_sampling.clear();
      for (absl::string_view x : absl::StrSplit(v, ',')) {
        if (x != "rpc" && x != "local") return false;
        f->local_sampling.push_back(x == "local");
      }
    } else if (k == "--shm-ring") {
      f->shm_ring.clear();
      for (absl::string_view x : absl::StrSplit(v, ',')) {
        if (x != "on" && x != "off") return false;
        f->shm_ring.push_back(x == "on");
      }
    } else if (k == "--fanouts") {
      if (!ParseFanouts(v, &f->fanouts)) return false;
    } else {
      std::fprintf(stderr, "server_bench: bad flag %s %s\n", k.c_str(), v.c_str());
      return false;
    }
  }
  if (f->cross_host) {
    CrossHostFlags& c = f->cross;
    c.partition = f->partition;
    c.stream = {.batches = f->batches, .batch_size = f->batch_size, .fanouts = f->fanouts,
                .dtype = f->dtype, .ring = f->shm_ring.empty() || f->shm_ring[0]};
    if (!f->clients.empty()) c.clients = f->clients;
    c.threads = f->threads;
    c.prefetch = f->prefetch;
    c.warmup = f->warmup;
    return (!c.partition.empty() || !c.attach.empty()) && f->batches > 0 && f->threads > 0 &&
           (c.attach.empty() || c.modes.empty());
  }
  return !f->partition.empty() && f->batches > 0 && f->batch_size > 0 && f->threads > 0 &&
         !f->peer_features.empty() && !f->shm_ring.empty() && !f->local_sampling.empty();
}

}  // namespace
}  // namespace graphshard::bench

int main(int argc, char** argv) {
  graphshard::bench::Flags f;
  if (!graphshard::bench::ParseFlags(argc, argv, &f)) {
    std::fprintf(stderr, "usage: server_bench --partition DIR [--batches N] [--batch-size B] "
                         "[--fanouts 15,10,5] [--threads T] [--prefetch P] [--feature-dtype float32|float16] "
                         "[--peer-features rpc|local|rpc,local] [--clients 1,2,4,8]\n"
                         "       server_bench --partition DIR --cross-host MODES [--clients 1,2,4] "
                         "[--feature-dtype float32,float16] [--peer-cache-mib N]\n"
                         "       server_bench --attach H:P,H:P [--client-parts 0] [--attach-name NAME] "
                         "[--server-pids PID,...] [--net-dev DEV --link-gbit G] [--barrier DIR:N]\n"
                         "  MODES: %s\n", graphshard::bench::CrossHostModes().c_str());
    return 2;
  }
  // In-process servers get the allocator settings graphshard-server starts with
  // (server/malloc_tuning.h); GRAPHSHARD_MALLOC_TUNED=1 in the environment keeps glibc's
  // defaults (the baseline of that change).
  if (f.cross.attach.empty()) graphshard::server::ReexecWithMallocTunables(argv, 256);
  if (f.cross_host) return graphshard::bench::RunCrossHost(f.cross);
  return graphshard::bench::Run(f);
}
