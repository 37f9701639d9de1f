// graphshard-health: waits until every partition server answers the standard gRPC health check
// with SERVING, or fails after a deadline naming the servers that did not.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/flag_spelling.h"
#include "common/registry.h"
#include "grpc/health/v1/health.grpc.pb.h"

ABSL_FLAG(std::string, registry, "", "registry folder written by the servers");
ABSL_FLAG(int, parts, 0, "number of parts to wait for (with --registry)");
ABSL_FLAG(std::string, servers, "", "explicit addresses host:port,... instead of --registry");
ABSL_FLAG(double, timeout_s, 60, "overall deadline, seconds");

namespace {

// OK when `address` answers SERVING within `deadline`; the reason otherwise.
std::string CheckOnce(const std::string& address, absl::Time deadline) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(std::min(deadline, absl::Now() + absl::Seconds(2))));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return absl::StrCat(address, ": ", status.error_message());
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::StrCat(address, ": not SERVING");
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "graphshard-health (--registry DIR --parts K | --servers H:P,...) [--timeout_s S]");
  std::vector<std::string> storage;
  std::vector<char*> args = graphshard::common::UnderscoreFlagNames(argc, argv, storage);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  const absl::Time deadline = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  std::vector<std::string> fixed;
  int parts = absl::GetFlag(FLAGS_parts);
  if (!absl::GetFlag(FLAGS_servers).empty()) {
    auto list = graphshard::common::ParseAddressList(absl::GetFlag(FLAGS_servers));
    if (!list.ok()) {
      std::fprintf(stderr, "graphshard-health: %s\n", std::string(list.status().message()).c_str());
      return 2;
    }
    fixed = *list;
    parts = static_cast<int>(fixed.size());
  } else if (absl::GetFlag(FLAGS_registry).empty() || parts <= 0) {
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
        auto found = graphshard::common::LookupAddress(absl::GetFlag(FLAGS_registry), p);
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
