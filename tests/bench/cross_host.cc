#include "tests/bench/cross_host.h"

#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/manifest.h"
#include "proto/graphshard.grpc.pb.h"
#include "rpc/channel.h"
#include "server/partition_server.h"
#include "server/proto_convert.h"
#include "tests/bench/bench_util.h"

namespace graphshard::bench {
namespace {

// How the servers of a mode reach their peers.
struct Mode {
  std::string name;
  bool isolated = false;  // --isolated-peers: every peer as on another host
  server::PeerFeatures features = server::PeerFeatures::kLocal;
  server::PeerSampling sampling = server::PeerSampling::kLocal;
  bool cache = false;  // --peer-cache-mib (CrossHostFlags::cache_mib)
  engine::FeatureDtype peer_dtype = engine::FeatureDtype::kFloat32;
  bool bulk = false;  // --peer-transport bulk (docs/TRANSPORT.md), else gRPC
  bool whole = false;  // --peer-piece-mib 0: a peer's rows of a batch in one answer
};

const std::vector<Mode>& AllModes() {
  using F = server::PeerFeatures;
  using S = server::PeerSampling;
  constexpr auto kF16 = engine::FeatureDtype::kFloat16;
  constexpr auto kF32 = engine::FeatureDtype::kFloat32;
  static const std::vector<Mode> modes = {
      {"samehost", false, F::kLocal, S::kLocal, false, kF32},  // peers' parts mapped here
      {"samehost_rpc", false, F::kRpc, S::kRpc, false, kF32},  // peers asked, rows through shm
      {"crosshost", true, F::kRpc, S::kRpc, false, kF32},
      {"crosshost_cache", true, F::kRpc, S::kRpc, true, kF32},
      {"crosshost_f16wire", true, F::kRpc, S::kRpc, false, kF16},
      {"crosshost_cache_f16wire", true, F::kRpc, S::kRpc, true, kF16},
      {"crosshost_bulk", true, F::kRpc, S::kRpc, false, kF32, true},
      {"crosshost_bulk_cache", true, F::kRpc, S::kRpc, true, kF32, true},
      {"crosshost_bulk_f16wire", true, F::kRpc, S::kRpc, false, kF16, true},
      {"crosshost_bulk_cache_f16wire", true, F::kRpc, S::kRpc, true, kF16, true},
      // "_norows": the clients ask for batches without feature rows (a trainer with
      // --feature-store device); Measure reads the suffix.
      {"samehost_norows", false, F::kLocal, S::kLocal, false, kF32},
      {"crosshost_bulk_norows", true, F::kRpc, S::kRpc, false, kF32, true},
      // "_whole": without engine::SplitGathers (the code before it; docs/SERVER.md).
      {"samehost_rpc_whole", false, F::kRpc, S::kRpc, false, kF32, false, true},
      {"crosshost_whole", true, F::kRpc, S::kRpc, false, kF32, false, true},
      {"crosshost_bulk_whole", true, F::kRpc, S::kRpc, false, kF32, true, true},
  };
  return modes;
}

const char* DtypeName(v1::FeatureDtype d) { return d == v1::FLOAT16 ? "f16" : "f32"; }

// The servers' counters this section reports, summed over the servers it reads.
struct Counters {
  int64_t wire = 0, shm = 0, hits = 0, misses = 0, saved = 0;
  bool cache = false;
  void Add(const v1::Stats& s) {
    wire += s.peer_wire_bytes_sent() + s.peer_wire_bytes_received();
    shm += s.peer_shm_bytes_received();
    if (s.has_peer_cache()) {
      cache = true;
      hits += s.peer_cache().hits();
      misses += s.peer_cache().misses();
      saved += s.peer_cache().bytes_saved();
    }
  }
};

Counters Read(const std::vector<std::string>& addresses) {
  Counters c;
  for (const std::string& a : addresses) {
    if (std::optional<v1::Stats> s = StatsAt(a)) c.Add(*s);
  }
  return c;
}

// utime + stime of the processes, seconds (/proc/PID/stat); 0 for one that cannot be read.
double ProcessesCpuSeconds(const std::vector<int>& pids) {
  double total = 0;
  for (int pid : pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    // Fields after the command (which may hold spaces) start after the last ')'.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    total += static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return total;
}

// tx and rx bytes of a network device of this namespace (0, 0 if unknown).
std::pair<int64_t, int64_t> DeviceBytes(const std::string& dev) {
  auto read = [&](const char* what) -> int64_t {
    std::ifstream in("/sys/class/net/" + dev + "/statistics/" + what);
    int64_t v = 0;
    in >> v;
    return v;
  };
  if (dev.empty()) return {0, 0};
  return {read("tx_bytes"), read("rx_bytes")};
}

// Waits until `count` processes reached `tag` (one file each in `dir`); false after 120 s.
bool Barrier(const CrossHostFlags& f, const std::string& tag) {
  if (f.barrier_dir.empty()) return true;
  const std::string mine = absl::StrCat(f.barrier_dir, "/", tag, ".", ::getpid());
  std::ofstream(mine).put('\n');
  const double deadline = Now() + 120;
  while (Now() < deadline) {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(f.barrier_dir)) {
      n += e.path().filename().string().rfind(tag + ".", 0) == 0 ? 1 : 0;
    }
    if (n >= f.barrier_count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::fprintf(stderr, "cross-host: barrier %s: %d processes did not all arrive in 120 s\n",
               tag.c_str(), f.barrier_count);
  return false;
}

// The training seeds of each part (empty for parts not asked), through GetSplit.
std::vector<std::vector<int64_t>> TrainSplits(const std::vector<std::string>& addresses,
                                              const std::vector<int>& parts) {
  std::vector<std::vector<int64_t>> train(addresses.size());
  for (int p : parts) {
    auto stub = v1::PartitionService::NewStub(rpc::MakeChannel(addresses[p]));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::GetSplitRequest req;
    req.set_split("train");
    v1::GetSplitResponse resp;
    grpc::Status s = stub->GetSplit(&ctx, req, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "cross-host: GetSplit from part %d at %s: %s\n", p,
                   addresses[p].c_str(), s.error_message().c_str());
      continue;
    }
    auto ids = server::FromBytes<int64_t>(resp.ids(), "ids");
    if (ids.ok()) train[p] = *std::move(ids);
  }
  return train;
}

// Until every server's cache filled the parts it chose (10 min at most); seconds waited.
double WaitForCaches(const std::vector<std::string>& addresses) {
  const double t0 = Now();
  for (const std::string& a : addresses) {
    while (Now() - t0 < 600) {
      std::optional<v1::Stats> s = StatsAt(a);
      if (s.has_value() && (!s->has_peer_cache() || s->peer_cache().parts_pending() == 0)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return Now() - t0;
}

// One mode's timed runs (every dtype and client count) against servers at `addresses`, with
// clients of `parts` only; batches/s by "<dtype>_<n>clients".
std::map<std::string, double> Measure(const CrossHostFlags& f, const std::string& mode,
                                      const std::vector<std::string>& addresses,
                                      const std::vector<int>& parts, bool in_process) {
  const int k = static_cast<int>(addresses.size());
  std::vector<std::string> mine;
  for (int p : parts) mine.push_back(addresses[p]);
  const std::vector<std::vector<int64_t>> train = TrainSplits(addresses, parts);
  std::map<std::string, double> out;
  const double cores = UsableCores();
  {  // warm-up, untimed: each server builds a few batches (pages faulted in, channels up)
    std::vector<std::thread> threads;
    for (int p : parts) {
      threads.emplace_back([&, p] { StreamOnce(f.stream, addresses[p], train[p], true, 99, 4); });
    }
    for (auto& t : threads) t.join();
  }
  for (v1::FeatureDtype dtype : f.dtypes) {
    StreamParams sp = f.stream;
    sp.dtype = dtype;
    // "_norows" modes, and attached runs named after one (netns_crosshost_bulk_norows_A).
    sp.without_features = absl::StrContains(mode, "_norows");
    for (int n : f.clients) {
      std::vector<int> clients;
      for (int c = 0; c < n; ++c) {
        if (std::find(parts.begin(), parts.end(), c % k) != parts.end()) clients.push_back(c);
      }
      const std::string key = absl::StrCat(DtypeName(dtype), "_", n, "clients");
      const std::string name = absl::StrCat("xhost_", mode, "_", key);
      std::vector<ClientRing> rings(n);
      // Ring ids unique per run of this process (a server keeps a client's ring between its
      // streams, for the reader that opened it).
      const bool warm = f.warmup > 0 && sp.ring;
      if (warm) {
        std::vector<std::thread> warmers;
        for (int c : clients) {
          warmers.emplace_back([&, c] {
            StreamOnce(sp, addresses[c % k], ClientShard(train, n, c), true, 5000 + c, f.warmup,
                       &rings[c]);
          });
        }
        for (auto& t : warmers) t.join();
      }
      if (!Barrier(f, key) || clients.empty()) continue;  // (attached: the other side's run)
      const Counters c0 = Read(mine);
      const auto net0 = DeviceBytes(f.net_dev);
      const double cpu0 = in_process ? ProcessCpuSeconds() : ProcessesCpuSeconds(f.server_pids);
      const double t0 = Now();
      std::vector<Totals> got(n);
      std::vector<std::thread> threads;
      for (int c : clients) {
        threads.emplace_back([&, c] {
          got[c] = StreamOnce(sp, addresses[c % k], ClientShard(train, n, c), true, 10 + c, 0,
                              warm ? &rings[c] : nullptr);
        });
      }
      for (auto& t : threads) t.join();
      const double dt = Now() - t0;
      const double cpu = (in_process ? ProcessCpuSeconds() : ProcessesCpuSeconds(f.server_pids)) - cpu0;
      const auto net1 = DeviceBytes(f.net_dev);
      const Counters c1 = Read(mine);
      Totals all;
      for (const Totals& t : got) all.Add(t);
      if (all.batches == 0) {
        std::fprintf(stderr, "cross-host: %s: no batches\n", name.c_str());
        continue;
      }
      const double per = 1.0 / static_cast<double>(all.batches);
      const double bps = all.batches / dt;
      out[key] = bps;
      PrintResult(name + "_batches_per_s", bps, "batches/s");
      PrintResult(name + "_seeds_per_s", all.seeds / dt, "seeds/s");
      PrintResult(name + "_batches", static_cast<double>(all.batches), "batches");
      PrintResult(name + "_peer_wire_bytes_per_batch", (c1.wire - c0.wire) * per, "B/batch");
      PrintResult(name + "_peer_shm_bytes_per_batch", (c1.shm - c0.shm) * per, "B/batch");
      if (in_process || !f.server_pids.empty()) {
        const double server_cpu = in_process ? cpu - all.client_cpu_s : cpu;
        PrintResult(name + "_server_cpu_util", server_cpu / dt / cores, "fraction_of_cores");
      }
      if (c1.cache) {
        const int64_t hits = c1.hits - c0.hits, asked = hits + c1.misses - c0.misses;
        PrintResult(name + "_cache_hit_rate", asked > 0 ? static_cast<double>(hits) / asked : 0,
                    "fraction");
        PrintResult(name + "_cache_bytes_saved_per_batch", (c1.saved - c0.saved) * per, "B/batch");
      }
      if (!f.net_dev.empty()) {
        const double tx = (net1.first - net0.first) / dt, rx = (net1.second - net0.second) / dt;
        const double link = f.link_gbit * 1e9 / 8;
        PrintResult(name + "_link_tx_bytes_per_s", tx, "B/s");
        PrintResult(name + "_link_rx_bytes_per_s", rx, "B/s");
        PrintResult(name + "_link_utilisation", std::max(tx, rx) / link, "fraction_of_link");
      }
      std::fprintf(stderr, "  %s: %lld batches in %.2f s (%.1f batches/s), %.0f peer B/batch\n",
                   name.c_str(), static_cast<long long>(all.batches), dt, bps,
                   (c1.wire - c0.wire) * per);
    }
  }
  return out;
}

}  // namespace

std::string CrossHostModes() {
  std::vector<std::string> names;
  for (const Mode& m : AllModes()) names.push_back(m.name);
  return absl::StrJoin(names, ",");
}

int RunCrossHost(const CrossHostFlags& f) {
  PrintResult("cores", UsableCores(), "cores");
  if (!f.attach.empty()) {
    std::vector<int> parts = f.client_parts;
    if (parts.empty()) {
      for (int p = 0; p < static_cast<int>(f.attach.size()); ++p) parts.push_back(p);
    }
    Measure(f, f.attach_name, f.attach, parts, false);
    return 0;
  }
  auto manifest = common::ReadManifest(f.partition);
  if (!manifest.ok()) {
    std::fprintf(stderr, "%s\n", std::string(manifest.status().message()).c_str());
    return 1;
  }
  const int k = manifest->num_parts;
  std::vector<int> parts;
  for (int p = 0; p < k; ++p) parts.push_back(p);
  std::map<std::string, std::map<std::string, double>> bps;  // mode -> key -> batches/s
  for (const std::string& name : f.modes) {
    const Mode* mode = nullptr;
    for (const Mode& m : AllModes()) mode = m.name == name ? &m : mode;
    if (mode == nullptr) {
      std::fprintf(stderr, "cross-host: unknown mode %s (modes: %s)\n", name.c_str(),
                   CrossHostModes().c_str());
      return 1;
    }
    const std::string registry = std::filesystem::temp_directory_path() /
                                 absl::StrCat("gs-xhost-", ::getpid(), "-", name);
    std::vector<std::unique_ptr<server::PartitionServer>> servers;
    std::vector<std::string> addresses;
    for (int p = 0; p < k; ++p) {
      server::ServerOptions so;
      so.partition_dir = f.partition;
      so.part = p;
      so.registry_dir = registry;
      so.threads = f.threads;
      so.service.prefetch = f.prefetch;
      so.rpc_timeout = absl::Seconds(120);
      so.peer_features = mode->features;
      so.peer_sampling = mode->sampling;
      so.isolated_peers = mode->isolated;
      so.peer_cache_bytes = mode->cache ? int64_t{f.cache_mib} << 20 : 0;
      so.peer_dtype = mode->peer_dtype;
      if (mode->whole) so.peer_piece_bytes = 0;
      so.peer_transport = mode->bulk ? server::PeerTransport::kBulk : server::PeerTransport::kGrpc;
      auto s = server::PartitionServer::Start(so);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", std::string(s.status().message()).c_str());
        return 1;
      }
      addresses.push_back((*s)->address());
      servers.push_back(*std::move(s));
    }
    std::fprintf(stderr, "cross-host: mode %s\n", name.c_str());
    if (mode->cache) {
      const double fill = WaitForCaches(addresses);
      PrintResult("xhost_" + name + "_cache_fill_s", fill, "s");
      int64_t rows = 0, bytes = 0;
      for (const std::string& a : addresses) {
        if (std::optional<v1::Stats> s = StatsAt(a)) {
          rows += s->peer_cache().rows();
          bytes += s->peer_cache().bytes();
        }
      }
      PrintResult("xhost_" + name + "_cache_rows", static_cast<double>(rows), "rows");
      PrintResult("xhost_" + name + "_cache_bytes", static_cast<double>(bytes), "B");
    }
    bps[name] = Measure(f, name, addresses, parts, true);
    for (auto& s : servers) s->Shutdown(absl::Seconds(5));
    std::filesystem::remove_all(registry);
  }
  // The bulk transport against gRPC for the same cross-host peers (same run).
  auto bulk = bps.find("crosshost_bulk"), grpc = bps.find("crosshost");
  if (bulk != bps.end() && grpc != bps.end()) {
    for (const auto& [key, value] : bulk->second) {
      auto base = grpc->second.find(key);
      if (base == grpc->second.end()) continue;
      PrintCompared(absl::StrCat("xhost_crosshost_bulk_vs_crosshost_", key, "_batches_per_s"),
                    value, "batches/s", absl::StrCat("xhost_crosshost_", key, "_batches_per_s"),
                    base->second);
    }
  }
  // A peer's rows in pieces (the default) against in one answer, per transport (same run).
  for (const std::string& pieces :
       {std::string("samehost_rpc"), std::string("crosshost"), std::string("crosshost_bulk")}) {
    auto split = bps.find(pieces), whole = bps.find(pieces + "_whole");
    if (split == bps.end() || whole == bps.end()) continue;
    for (const auto& [key, value] : split->second) {
      auto base = whole->second.find(key);
      if (base == whole->second.end()) continue;
      PrintCompared(absl::StrCat("xhost_", pieces, "_vs_whole_", key, "_batches_per_s"), value,
                    "batches/s", absl::StrCat("xhost_", pieces, "_whole_", key, "_batches_per_s"),
                    base->second);
    }
  }
  // Every mode against the same-host one, per dtype and client count (same run).
  auto same = bps.find("samehost");
  if (same == bps.end()) return 0;
  for (const auto& [name, by_key] : bps) {
    if (name == "samehost") continue;
    for (const auto& [key, value] : by_key) {
      auto base = same->second.find(key);
      if (base == same->second.end()) continue;
      PrintCompared(absl::StrCat("xhost_", name, "_vs_samehost_", key, "_batches_per_s"), value,
                    "batches/s", absl::StrCat("xhost_samehost_", key, "_batches_per_s"),
                    base->second);
    }
  }
  return 0;
}

}  // namespace graphshard::bench
