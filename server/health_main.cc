// graphshard-health: waits until every partition server (every replica with --replicas) answers
// the standard gRPC health check with SERVING, or fails after a deadline naming the servers that
// did not.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/flags.h"
#include "common/poll.h"
#include "common/server_list.h"
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
  absl::Status s = graphshard::rpc::WithPlaintextHint(
      graphshard::rpc::CheckHealth(graphshard::rpc::MakeChannel(address, rpc),
                                   std::min(deadline, absl::Now() + absl::Seconds(2))),
      rpc);
  *refused = absl::IsUnauthenticated(s);
  if (!s.ok()) return absl::StrCat(address, ": ", s.message());
  return "";
}

// One round: checks every server not yet seen SERVING (`healthy`, by part and replica). OK when
// all are; Unavailable when some are not yet (*problems: why, one line each); Unauthenticated
// when one refused our token.
absl::Status CheckRound(const graphshard::common::ServerListOptions& list,
                        const graphshard::rpc::RpcOptions& rpc, absl::Time deadline,
                        std::set<std::pair<int, int>>* healthy,
                        std::vector<std::string>* problems) {
  problems->clear();
  absl::StatusOr<std::vector<graphshard::common::ServerTarget>> targets =
      graphshard::common::ResolveServers(list);
  if (!targets.ok()) {
    problems->push_back(std::string(targets.status().message()));
    return absl::UnavailableError(problems->back());
  }
  for (const graphshard::common::ServerTarget& t : *targets) {
    if (healthy->count({t.part, t.replica}) > 0) continue;
    const std::string name = graphshard::common::ServerName(t.part, t.replica);
    if (t.address.empty()) {
      problems->push_back(absl::StrCat(name, ": ", t.missing.message()));
      continue;
    }
    bool refused = false;
    const std::string problem = CheckOnce(t.address, rpc, deadline, &refused);
    if (problem.empty()) {
      healthy->emplace(t.part, t.replica);
      continue;
    }
    problems->push_back(absl::StrCat(name, " at ", problem));
    // A wrong or missing token is not going to get better.
    if (refused) return absl::UnauthenticatedError(problems->back());
  }
  if (problems->empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrJoin(*problems, "; "));
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
  const graphshard::common::ServerListOptions list{
      .servers = f.servers, .registry = f.registry, .parts = f.parts, .replicas = f.replicas};
  if (absl::Status s = graphshard::common::CheckServerSource(list); !s.ok()) {
    std::fprintf(stderr, "graphshard-health: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (!f.registry.empty() && (f.parts <= 0 || f.replicas < 1)) {
    std::fprintf(stderr,
                 "graphshard-health: --registry needs --parts K >= 1 (and --replicas R >= 1; got "
                 "--parts %d --replicas %d)\n",
                 f.parts, f.replicas);
    return 2;
  }
  graphshard::common::PollOptions poll;
  poll.deadline = absl::Now() + absl::Seconds(f.timeout_s);
  poll.interval = absl::Milliseconds(200);
  std::set<std::pair<int, int>> healthy;
  std::vector<std::string> problems;
  const absl::Status status = graphshard::common::PollUntil(
      poll, [&] { return CheckRound(list, rpc, poll.deadline, &healthy, &problems); });
  if (status.ok()) return 0;
  if (absl::IsUnauthenticated(status)) {
    std::fprintf(stderr, "graphshard-health: refused: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  for (const std::string& why : problems) {
    std::fprintf(stderr, "graphshard-health: not healthy: %s\n", why.c_str());
  }
  return 1;
}
