// graphshard-stats: a live view of the partition servers. Every --interval-s it asks each
// server for its Stats (one GetStats call each, all at once, each with a deadline) and prints
// one line per server (server/stats_view.h): streams, batches/s, p50/p99 batch build latency,
// bytes out, peer bytes, cache hit rate. A server that does not answer in time is named in its
// line ("down: ..."), never waited for past the deadline. Servers are re-read from the registry
// every round, so restarted servers (new ports) and replicas appear as they register.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "common/server_list.h"
#include "rpc/channel.h"
#include "rpc/security.h"
#include "rpc/stats.h"
#include "server/stats_view.h"

namespace {

namespace common = graphshard::common;
namespace server = graphshard::server;

struct Flags {
  std::string registry;
  std::string servers;
  int parts = 0;
  double interval_s = 1;
  int count = 0;
  double timeout_s = 0;  // 0 = the interval, at most 5 s
  graphshard::rpc::SecurityFlags security;
};

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  common::FlagSet flags(
      "usage: graphshard-stats (--registry DIR [--parts K] | --servers H:P,...) "
      "[--interval-s S] [--count N]\n"
      "Prints one line per server every interval: streams, batches/s, p50/p99 batch build\n"
      "latency (ms), MB out, peer MB, cache hit rate (docs/SERVER.md, \"Live view\").");
  flags.AddString("registry", &f.registry, "DIR", "registry folder written by the servers");
  flags.AddString("servers", &f.servers, "HOST:PORT,...",
                  "explicit addresses host:port,... instead of --registry (a:1+b:1 = replicas)");
  flags.AddInt("parts", &f.parts, "K",
               "with --registry: also name parts 0..K-1 that have no entry (0 = entries only)");
  flags.AddDouble("interval-s", &f.interval_s, "S", "seconds between rounds");
  flags.AddInt("count", &f.count, "N", "stop after N rounds (0 = until interrupted)");
  flags.AddDouble("timeout-s", &f.timeout_s, "S",
                  "deadline of each GetStats call (0 = the interval, at most 5 s)");
  graphshard::rpc::AddSecurityFlags(flags, &f.security);
  absl::StatusOr<common::ParsedArgs> parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "graphshard-stats: %s\n", std::string(parsed.status().message()).c_str());
    return common::kExitUsageError;
  }
  if (parsed->help) {
    std::fputs(flags.Usage().c_str(), stdout);
    return 0;
  }
  auto usage = [](const char* why) {
    std::fprintf(stderr, "graphshard-stats: %s\n", why);
    return common::kExitUsageError;
  };
  const common::ServerListOptions server_list{
      .servers = f.servers, .registry = f.registry, .parts = f.parts, .replicas = 0};
  if (absl::Status s = common::CheckServerSource(server_list); !s.ok()) {
    return usage(std::string(s.message()).c_str());
  }
  graphshard::rpc::RpcOptions rpc;
  if (absl::Status s = graphshard::rpc::ApplySecurityFlags(f.security,
                                                           graphshard::rpc::Role::kClient, &rpc);
      !s.ok()) {
    return usage(std::string(s.message()).c_str());
  }
  if (!(f.interval_s > 0 && f.interval_s <= 3600)) {
    return usage("--interval-s must be in (0, 3600]");
  }
  if (f.count < 0) return usage("--count must be >= 0");
  if (f.timeout_s < 0) return usage("--timeout-s must be >= 0");
  const absl::Duration timeout =
      absl::Seconds(f.timeout_s > 0 ? f.timeout_s : std::min(f.interval_s, 5.0));

  std::map<std::string, std::shared_ptr<grpc::Channel>> channels;  // by address, kept
  std::map<std::string, server::StatsSnapshot> last;              // by address
  bool all_answered = true;
  // Round 0 takes the first snapshots silently, so every printed line has an interval's rates.
  for (int round = 0; f.count == 0 || round <= f.count; ++round) {
    const double round_start = NowS();
    absl::StatusOr<std::vector<common::ServerTarget>> targets = common::ResolveServers(server_list);
    if (!targets.ok()) {
      std::fprintf(stderr, "graphshard-stats: %s\n",
                   std::string(targets.status().message()).c_str());
    }
    std::vector<common::ServerTarget> list =
        targets.ok() ? *std::move(targets) : std::vector<common::ServerTarget>();
    std::vector<absl::StatusOr<graphshard::v1::Stats>> answers(list.size(),
                                                               absl::UnknownError("not asked"));
    std::vector<double> taken(list.size(), 0);
    {
      const absl::Time deadline = absl::Now() + timeout;
      std::vector<std::thread> calls;
      for (size_t i = 0; i < list.size(); ++i) {
        if (list[i].address.empty()) continue;
        std::shared_ptr<grpc::Channel>& channel = channels[list[i].address];
        if (channel == nullptr) channel = graphshard::rpc::MakeChannel(list[i].address, rpc);
        calls.emplace_back([&, i, channel] {
          answers[i] = graphshard::rpc::FetchStats(channel, deadline);
          taken[i] = NowS();
        });
      }
      for (std::thread& t : calls) t.join();
    }
    if (round > 0) {
      const std::string stamp = absl::FormatTime("%H:%M:%S", absl::Now(), absl::LocalTimeZone());
      all_answered = targets.ok();
      for (size_t i = 0; i < list.size(); ++i) {
        const common::ServerTarget& t = list[i];
        const std::string name = common::ServerName(t.part, t.replica);
        std::string line;
        if (t.address.empty()) {
          line = server::DownLine(name, "", t.missing);
          all_answered = false;
        } else if (!answers[i].ok()) {
          line = server::DownLine(name, t.address, answers[i].status());
          all_answered = false;
        } else {
          auto it = last.find(t.address);
          line = server::StatsLine(name, t.address, it != last.end() ? &it->second : nullptr,
                                   {*answers[i], taken[i]});
        }
        std::printf("%s %s\n", stamp.c_str(), line.c_str());
      }
      std::fflush(stdout);
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].address.empty() && answers[i].ok()) {
        last[list[i].address] = {*answers[i], taken[i]};
      } else if (!list[i].address.empty()) {
        last.erase(list[i].address);
      }
    }
    if (f.count != 0 && round == f.count) break;
    const double wait = round_start + f.interval_s - NowS();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  return all_answered ? 0 : 1;
}
