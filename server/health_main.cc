// graphshard-health: waits until every partition server (every replica with --replicas) answers
// the standard gRPC health check with SERVING, or fails after a deadline naming the servers that
// did not.
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/flags.h"
#include "common/registry.h"
#include "rpc/channel.h"
#include "rpc/health.h"
#include "rpc/security.h"

namespace {

struct Flags {
  std::string registry;
  int parts = 0;
  int replicas = 1;
  std::string servers;
  double timeout_s = 60;
  graphshard::rpc::SecurityFlags security;
};

// OK when `address` answers SERVING within `deadline`; the reason otherwise. *refused: the
// server refused our job token (waiting longer cannot help).
std::string CheckOnce(const std::string& address, const graphshard::rpc::RpcOptions& rpc,
                      absl::Time deadline, bool* refused) {
  absl::Status s = graphshard::rpc::CheckHealth(graphshard::rpc::MakeChannel(address, rpc),
                                                std::min(deadline, absl::Now() + absl::Seconds(2)));
  *refused = absl::IsUnauthenticated(s);
  if (!s.ok()) return absl::StrCat(address, ": ", s.message());
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  // Abseil spellings: this binary used Abseil flags, and scripts pass --timeout_s.
  graphshard::common::FlagSet flags(
      "usage: graphshard-health (--registry DIR --parts K | --servers H:P,...) [--timeout-s S]\n"
      "Flags may be spelled with dashes or underscores (--timeout-s = --timeout_s).",
      {.abseil_spellings = true});
  flags.AddString("registry", &f.registry, "DIR", "registry folder written by the servers");
  flags.AddInt("parts", &f.parts, "K", "number of parts to wait for (with --registry)");
  flags.AddInt("replicas", &f.replicas, "R",
               "with --registry: wait for replicas 0..R-1 of every part (part_K, part_K.rR)");
  flags.AddString("servers", &f.servers, "HOST:PORT,...",
                  "explicit addresses host:port,... instead of --registry (a:1+b:1 = replicas)");
  flags.AddDouble("timeout-s", &f.timeout_s, "S", "overall deadline, seconds");
  graphshard::rpc::AddSecurityFlags(flags, &f.security);
  absl::StatusOr<graphshard::common::ParsedArgs> parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "graphshard-health: %s\n", std::string(parsed.status().message()).c_str());
    return graphshard::common::kExitUsageError;
  }
  if (parsed->help) {
    std::fputs(flags.Usage().c_str(), stdout);
    return 0;
  }
  graphshard::rpc::RpcOptions rpc;
  if (absl::Status s = graphshard::rpc::ApplySecurityFlags(f.security,
                                                           graphshard::rpc::Role::kClient, &rpc);
      !s.ok()) {
    std::fprintf(stderr, "graphshard-health: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(f.timeout_s);
  // What to check: (part, replica, fixed address or "" = look it up in the registry).
  struct Target {
    int part;
    int replica;
    std::string address;
  };
  std::vector<Target> targets;
  if (!f.servers.empty()) {
    auto list = graphshard::common::ParseAddressList(f.servers);
    if (!list.ok()) {
      std::fprintf(stderr, "graphshard-health: %s\n", std::string(list.status().message()).c_str());
      return 2;
    }
    for (int p = 0; p < std::ssize(*list); ++p) {
      auto replicas = graphshard::common::SplitReplicas((*list)[static_cast<size_t>(p)]);
      for (int r = 0; r < std::ssize(*replicas); ++r) {
        targets.push_back({p, r, (*replicas)[static_cast<size_t>(r)]});
      }
    }
  } else if (f.registry.empty() || f.parts <= 0 || f.replicas < 1) {
    std::fprintf(stderr, "graphshard-health: give --registry DIR --parts K [--replicas R], or --servers\n");
    return 2;
  } else {
    for (int p = 0; p < f.parts; ++p) {
      for (int r = 0; r < f.replicas; ++r) targets.push_back({p, r, ""});
    }
  }
  std::vector<std::string> problem(targets.size(), "not checked");
  while (true) {
    int bad = 0;
    for (size_t i = 0; i < targets.size(); ++i) {
      if (problem[i].empty()) continue;
      const Target& t = targets[i];
      const std::string name = t.replica == 0 ? absl::StrCat("part ", t.part)
                                              : absl::StrCat("part ", t.part, " replica ", t.replica);
      std::string address = t.address;
      if (address.empty()) {
        const std::string file = graphshard::common::RegistryFile(f.registry, t.part, t.replica);
        auto found = graphshard::common::ReadRegistryEntry(file);
        if (!found.ok()) {
          problem[i] = absl::StrCat(name, ": ", found.status().message());
          ++bad;
          continue;
        }
        address = *found;
      }
      bool refused = false;
      problem[i] = CheckOnce(address, rpc, deadline, &refused);
      if (!problem[i].empty()) problem[i] = absl::StrCat(name, " at ", problem[i]);
      if (refused) {  // a wrong or missing token is not going to get better
        std::fprintf(stderr, "graphshard-health: refused: %s\n", problem[i].c_str());
        return 1;
      }
      bad += !problem[i].empty();
    }
    if (bad == 0) return 0;
    if (absl::Now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (const std::string& why : problem) {
    if (!why.empty()) std::fprintf(stderr, "graphshard-health: not healthy: %s\n", why.c_str());
  }
  return 1;
}
