// Load benchmark: N streaming clients (threads, default 16), each as a
// trainer reads (shared memory, its ring kept across streams), against real graphshard-server
// processes for a fixed time; per-batch latency and the servers' RSS over time.
//
//   load_bench --servers H:P,H:P --server-pids PID,PID [--clients 16] [--seconds 60]
//              [--batch-size 512] [--fanouts 10,5] [--batches-per-stream 20] [--sample-ms 1000]
//
// Client c reads server c mod K (K = servers) over its share of that part's train split
// (GetSplit), stream after stream (each --batches-per-stream batches, a new shuffle seed each)
// until --seconds have passed. Prints JSON lines (docs/DESIGN.md): batch latency p50/p99/max
// (seconds the client waited for each batch; the first of a stream includes opening it), the
// throughput, and the servers' summed RSS: its samples, and the least-squares slope over the
// run after its first fifth (warm-up: pools, rings and caches fill), in MiB per minute, with the
// growth over that window as a fraction of the mean ("flat" = no leak), and the slopes of its
// anonymous (heap) and shared-memory (batch segments) parts. Stream errors are
// counted and printed; a run with any exits 1. tests/bench/load_bench.sh starts the servers.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "proto/graphshard.grpc.pb.h"
#include "rpc/channel.h"
#include "server/proto_convert.h"
#include "tests/bench/stream_client.h"

namespace graphshard::bench {
namespace {

struct Flags {
  std::vector<std::string> servers;
  std::vector<int> server_pids;
  int clients = 16;
  double seconds = 60;
  int batch_size = 512;
  std::vector<int32_t> fanouts = {10, 5};
  int batches_per_stream = 20;
  int sample_ms = 1000;
  // Attackers next to the honest clients: threads sending oversized SampleMinibatch requests
  // (200 seeds, fanouts -1 x 8, disjoint: an answer no message can carry) in a loop.
  int oversized_clients = 0;
};

// Oversized requests until `end`, from `threads` threads over their own connections: how many
// were refused with RESOURCE_EXHAUSTED and how many ended otherwise.
struct OversizedTotals {
  int64_t refused = 0, other = 0;
};
OversizedTotals SendOversized(const std::vector<std::string>& servers,
                              const std::vector<std::vector<int64_t>>& train, int threads,
                              double end) {
  std::mutex mu;
  OversizedTotals totals;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const size_t p = static_cast<size_t>(t) % servers.size();
      auto stub = v1::PartitionService::NewStub(rpc::MakeChannel(servers[p]));
      v1::SampleMinibatchRequest big;
      const std::vector<int64_t>& own = train[p];
      big.set_seeds(server::ToBytes<int64_t>(
          std::vector<int64_t>(own.begin(), own.begin() + std::min<size_t>(200, own.size()))));
      for (int h = 0; h < 8; ++h) big.mutable_sampling()->add_fanouts(-1);
      big.mutable_sampling()->set_disjoint(true);
      OversizedTotals mine;
      while (Now() < end) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::Minibatch batch;
        const grpc::Status s = stub->SampleMinibatch(&ctx, big, &batch);
        (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ? mine.refused : mine.other)++;
      }
      std::lock_guard<std::mutex> lock(mu);
      totals.refused += mine.refused;
      totals.other += mine.other;
    });
  }
  for (std::thread& w : workers) w.join();
  return totals;
}

// A process's resident memory in MiB: all of it, its anonymous part (heap, stacks) and its
// shared-memory part (the batch segments it wrote, which the clients also map).
struct Rss {
  double total = 0, anon = 0, shmem = 0;
};
Rss RssOf(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  Rss r;
  while (std::getline(in, line)) {
    long long kib = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %lld", &kib) == 1) r.total = static_cast<double>(kib) / 1024.0;
    if (std::sscanf(line.c_str(), "RssAnon: %lld", &kib) == 1) r.anon = static_cast<double>(kib) / 1024.0;
    if (std::sscanf(line.c_str(), "RssShmem: %lld", &kib) == 1) r.shmem = static_cast<double>(kib) / 1024.0;
  }
  return r;
}

std::vector<int64_t> TrainSplit(const std::string& address) {
  auto stub = v1::PartitionService::NewStub(rpc::MakeChannel(address));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::GetSplitRequest request;
  request.set_split("train");
  v1::GetSplitResponse response;
  grpc::Status s = stub->GetSplit(&ctx, request, &response);
  if (!s.ok()) {
    std::fprintf(stderr, "load_bench: GetSplit from %s: %s\n", address.c_str(),
                 s.error_message().c_str());
    return {};
  }
  auto ids = server::FromBytes<int64_t>(response.ids(), "ids");
  return ids.ok() ? *ids : std::vector<int64_t>{};
}

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// Least-squares slope of y over x.
double Slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (x.size() < 2) return 0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double d = n * sxx - sx * sx;
  return d == 0 ? 0 : (n * sxy - sx * sy) / d;
}

int Run(const Flags& f) {
  const int k = static_cast<int>(f.servers.size());
  std::vector<std::vector<int64_t>> train(k);
  for (int p = 0; p < k; ++p) {
    train[p] = TrainSplit(f.servers[p]);
    if (train[p].empty()) return 1;
  }
  StreamParams params;
  params.batch_size = f.batch_size;
  params.fanouts = f.fanouts;
  params.batches = f.batches_per_stream;

  std::mutex mu;
  std::vector<double> latencies;
  Totals totals;
  std::atomic<bool> stop{false};
  const double start = Now();
  const double end = start + f.seconds;

  // RSS sampler: every --sample-ms until the clients are done.
  std::vector<double> sample_t, sample_rss, sample_anon, sample_shmem;
  std::thread sampler([&] {
    while (!stop.load()) {
      Rss sum;
      for (int pid : f.server_pids) {
        const Rss r = RssOf(pid);
        sum.total += r.total;
        sum.anon += r.anon;
        sum.shmem += r.shmem;
      }
      sample_t.push_back(Now() - start);
      sample_rss.push_back(sum.total);
      sample_anon.push_back(sum.anon);
      sample_shmem.push_back(sum.shmem);
      std::this_thread::sleep_for(std::chrono::milliseconds(f.sample_ms));
    }
  });

  OversizedTotals oversized;
  std::thread attackers([&] {
    if (f.oversized_clients > 0) oversized = SendOversized(f.servers, train, f.oversized_clients, end);
  });
  std::vector<std::thread> clients;
  for (int c = 0; c < f.clients; ++c) {
    clients.emplace_back([&, c] {
      ClientRing ring;
      const std::vector<int64_t> seeds = ClientShard(train, f.clients, c);
      std::vector<double> mine;
      Totals t;
      for (uint64_t stream = 0; Now() < end; ++stream) {
        t.Add(StreamOnce(params, f.servers[c % k], seeds, /*shm=*/true, stream * 1000 + c, 0,
                         &ring, [&](double s) { mine.push_back(s); }));
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
      totals.Add(t);
    });
  }
  for (std::thread& t : clients) t.join();
  const double wall = Now() - start;
  attackers.join();
  stop = true;
  sampler.join();

  std::vector<double> sorted = latencies;
  const double p50 = Percentile(sorted, 0.50), p99 = Percentile(sorted, 0.99);
  const double max = sorted.empty() ? 0 : *std::max_element(sorted.begin(), sorted.end());
  std::printf("{\"name\": \"load_batch_latency_p50\", \"value\": %.2f, \"unit\": \"ms\", "
              "\"clients\": %d, \"servers\": %d, \"batches\": %lld}\n",
              1e3 * p50, f.clients, k, static_cast<long long>(latencies.size()));
  std::printf("{\"name\": \"load_batch_latency_p99\", \"value\": %.2f, \"unit\": \"ms\", "
              "\"max_ms\": %.2f}\n", 1e3 * p99, 1e3 * max);
  std::printf("{\"name\": \"load_throughput\", \"value\": %.1f, \"unit\": \"batches/s\", "
              "\"seeds_per_s\": %.0f, \"wall_s\": %.1f, \"batch_size\": %d, "
              "\"stream_errors\": %lld}\n",
              static_cast<double>(totals.batches) / wall, static_cast<double>(totals.seeds) / wall,
              wall, f.batch_size, static_cast<long long>(totals.errors));
  if (f.oversized_clients > 0) {
    std::printf("{\"name\": \"load_oversized_requests\", \"value\": %lld, \"unit\": "
                "\"refused\", \"other_outcomes\": %lld, \"threads\": %d}\n",
                static_cast<long long>(oversized.refused), static_cast<long long>(oversized.other),
                f.oversized_clients);
  }
  // RSS: slope after the warm-up fifth, of the total and of its anonymous and shared parts.
  std::vector<double> x, y, y_anon, y_shmem;
  for (size_t i = 0; i < sample_t.size(); ++i) {
    if (sample_t[i] >= 0.2 * wall) {
      x.push_back(sample_t[i] / 60.0);
      y.push_back(sample_rss[i]);
      y_anon.push_back(sample_anon[i]);
      y_shmem.push_back(sample_shmem[i]);
    }
  }
  const double slope = Slope(x, y);
  double mean = 0;
  for (double v : y) mean += v;
  mean = y.empty() ? 0 : mean / static_cast<double>(y.size());
  const double window_min = x.empty() ? 0 : x.back() - x.front();
  std::string series;
  for (size_t i = 0; i < sample_t.size(); ++i) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s[%.1f, %.1f, %.1f, %.1f]", i ? ", " : "", sample_t[i],
                  sample_rss[i], sample_anon[i], sample_shmem[i]);
    series += buf;
  }
  std::printf("{\"name\": \"load_server_rss_slope\", \"value\": %.3f, \"unit\": \"MiB/min\", "
              "\"window_s\": %.1f, \"growth_fraction\": %.4f, \"rss_mean_mib\": %.1f, "
              "\"rss_first_mib\": %.1f, \"rss_last_mib\": %.1f, \"rss_max_mib\": %.1f, "
              "\"anon_slope\": %.3f, \"shmem_slope\": %.3f, "
              "\"samples_t_total_anon_shmem\": [%s]}\n",
              slope, 60 * window_min, mean == 0 ? 0 : slope * window_min / mean, mean,
              sample_rss.empty() ? 0 : sample_rss.front(),
              sample_rss.empty() ? 0 : sample_rss.back(),
              sample_rss.empty() ? 0 : *std::max_element(sample_rss.begin(), sample_rss.end()),
              Slope(x, y_anon), Slope(x, y_shmem), series.c_str());
  return totals.errors == 0 && !latencies.empty() ? 0 : 1;
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    bool ok = true;
    if (k == "--servers") {
      f->servers = absl::StrSplit(v, ',', absl::SkipEmpty());
    } else if (k == "--server-pids" || k == "--fanouts") {
      std::vector<int> list;
      for (absl::string_view s : absl::StrSplit(v, ',', absl::SkipEmpty())) {
        int n = 0;
        ok = ok && absl::SimpleAtoi(s, &n);
        list.push_back(n);
      }
      if (k == "--server-pids") f->server_pids = list;
      else f->fanouts.assign(list.begin(), list.end());
    } else if (k == "--clients") {
      ok = absl::SimpleAtoi(v, &f->clients) && f->clients > 0;
    } else if (k == "--seconds") {
      ok = absl::SimpleAtod(v, &f->seconds) && f->seconds > 0;
    } else if (k == "--batch-size") {
      ok = absl::SimpleAtoi(v, &f->batch_size) && f->batch_size > 0;
    } else if (k == "--batches-per-stream") {
      ok = absl::SimpleAtoi(v, &f->batches_per_stream) && f->batches_per_stream > 0;
    } else if (k == "--oversized-clients") {
      ok = absl::SimpleAtoi(v, &f->oversized_clients) && f->oversized_clients >= 0;
    } else if (k == "--sample-ms") {
      ok = absl::SimpleAtoi(v, &f->sample_ms) && f->sample_ms > 0;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "load_bench: bad flag %s %s\n", k.c_str(), v.c_str());
      return false;
    }
  }
  return argc % 2 == 1 && !f->servers.empty() && !f->server_pids.empty();
}

}  // namespace
}  // namespace graphshard::bench

int main(int argc, char** argv) {
  graphshard::bench::Flags flags;
  if (!graphshard::bench::ParseFlags(argc, argv, &flags)) {
    std::fprintf(stderr,
                 "usage: load_bench --servers H:P,H:P --server-pids PID,PID [--clients 16] "
                 "[--seconds 60] [--batch-size 512] [--fanouts 10,5] [--batches-per-stream 20] "
                 "[--sample-ms 1000] [--oversized-clients 0]\n");
    return 2;
  }
  return graphshard::bench::Run(flags);
}
