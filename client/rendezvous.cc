#include "client/rendezvous.h"

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace graphshard::client {
namespace {

struct IntVar {
  std::string name;  // the variable it came from, for messages
  int64_t value = 0;
};

// The first set variable of `names`, parsed as an integer; nullopt if none is set.
absl::StatusOr<absl::optional<IntVar>> LookupInt(const EnvLookup& env,
                                                 std::initializer_list<absl::string_view> names) {
  for (absl::string_view name : names) {
    absl::optional<std::string> raw = env(name);
    if (!raw.has_value()) continue;
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*raw), &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment ", name, "='", *raw, "' is not an integer"));
    }
    return absl::optional<IntVar>(IntVar{std::string(name), v});
  }
  return absl::optional<IntVar>();
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](absl::string_view name) -> absl::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return absl::nullopt;
    return std::string(v);
  };
}

absl::StatusOr<RendezvousConfig> ParseRendezvous(const EnvLookup& env) {
  RendezvousConfig c;
  ASSIGN_OR_RETURN(auto world, LookupInt(env, {"WORLD_SIZE", "SLURM_NTASKS"}));
  ASSIGN_OR_RETURN(auto rank, LookupInt(env, {"RANK", "SLURM_PROCID"}));
  ASSIGN_OR_RETURN(auto local, LookupInt(env, {"LOCAL_RANK", "SLURM_LOCALID"}));
  ASSIGN_OR_RETURN(auto port, LookupInt(env, {"MASTER_PORT"}));
  if (world.has_value()) {
    if (world->value < 1 || world->value > (1 << 20)) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment ", world->name, "=", world->value, ": must be >= 1"));
    }
    c.world_size = static_cast<int>(world->value);
  }
  if (rank.has_value()) {
    if (rank->value < 0 || rank->value >= c.world_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "environment ", rank->name, "=", rank->value, ": must be in [0, ", c.world_size,
          ") (world size ", c.world_size,
          world.has_value() ? absl::StrCat(" from ", world->name) : " by default", ")"));
    }
    c.rank = static_cast<int>(rank->value);
  }
  if (local.has_value()) {
    if (local->value < 0 || local->value > (1 << 20)) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment ", local->name, "=", local->value, ": must be >= 0"));
    }
    c.local_rank = static_cast<int>(local->value);
  }
  if (port.has_value()) {
    if (port->value < 1 || port->value > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment MASTER_PORT=", port->value, ": must be in 1-65535"));
    }
    c.master_port = static_cast<uint16_t>(port->value);
  } else if (c.world_size > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "world size ", c.world_size, " needs MASTER_PORT (and MASTER_ADDR unless 127.0.0.1)"));
  }
  if (absl::optional<std::string> addr = env("MASTER_ADDR"); addr.has_value()) {
    std::string a(absl::StripAsciiWhitespace(*addr));
    if (a.empty()) return absl::InvalidArgumentError("environment MASTER_ADDR is empty");
    c.master_addr = std::move(a);
  }
  return c;
}

}  // namespace graphshard::client
