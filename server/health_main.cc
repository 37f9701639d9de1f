// graphshard-health: waits until every partition server answers the standard gRPC health check
// with SERVING, or fails after a deadline naming the servers that did not.
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

namespace {

struct Flags {
  std::string registry;
  int parts = 0;
  std::string servers;
  double timeout_s = 60;
};

// OK when `address` answers SERVING within `deadline`; the reason otherwise.
std::string CheckOnce(const std::string& address, absl::Time deadline) {
  absl::Status s = graphshard::rpc::CheckHealth(graphshard::rpc::MakeChannel(address),
                                                std::min(deadline, absl::Now() + absl::Seconds(2)));
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
  flags.AddString("servers", &f.servers, "HOST:PORT,...",
                  "explicit addresses host:port,... instead of --registry");
  flags.AddDouble("timeout-s", &f.timeout_s, "S", "overall deadline, seconds");
  absl::StatusOr<graphshard::common::ParsedArgs> parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "graphshard-health: %s\n", std::string(parsed.status().message()).c_str());
    return graphshard::common::kExitUsageError;
  }
  if (parsed->help) {
    std::fputs(flags.Usage().c_str(), stdout);
    return 0;
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(f.timeout_s);
  std::vector<std::string> fixed;
  int parts = f.parts;
  if (!f.servers.empty()) {
    auto list = graphshard::common::ParseAddressList(f.servers);
    if (!list.ok()) {
      std::fprintf(stderr, "graphshard-health: %s\n", std::string(list.status().message()).c_str());
      return 2;
    }
    fixed = *list;
    parts = static_cast<int>(fixed.size());
  } else if (f.registry.empty() || parts <= 0) {
    std::fprintf(stderr, "graphshard-health: give --registry DIR --parts K, or --servers\n");
    return 2;
  }
  std::vector<std::string> problem(parts, "not checked");
  while (true) {
    int bad = 0;
    for (int p = 0; p < parts; ++p) {
      if (problem[p].empty()) continue;
      std::string address;
      if (!fixed.empty()) {
        address = fixed[p];
      } else {
        auto found = graphshard::common::LookupAddress(f.registry, p);
        if (!found.ok()) {
          problem[p] = std::string(found.status().message());
          ++bad;
          continue;
        }
        address = *found;
      }
      problem[p] = CheckOnce(address, deadline);
      if (!problem[p].empty()) problem[p] = absl::StrCat("part ", p, " at ", problem[p]);
      bad += !problem[p].empty();
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
