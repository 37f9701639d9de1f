#include "client/device_share.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace graphshard::client {
namespace {
constexpr char kHandle = 'H';
constexpr char kFailure = 'E';
}  // namespace

std::string PublishedShare(const std::string& handle) { return kHandle + handle; }

std::string PublishedShareFailure(const absl::Status& failure) {
  return absl::StrCat(std::string(1, kFailure), static_cast<int>(failure.code()));
}

std::string SharedHandle(absl::string_view published) {
  if (published.size() < 2 || published[0] != kHandle) return "";
  return std::string(published.substr(1));
}

absl::Status SharesLoaded(const std::vector<std::string>& published, absl::string_view type,
                          const absl::Status& own) {
  if (!own.ok()) return own;
  int first_failed = -1;
  bool did_not_fit = false;
  for (int r = 0; r < static_cast<int>(published.size()); ++r) {
    const std::string& p = published[static_cast<size_t>(r)];
    if (!SharedHandle(p).empty()) continue;
    if (first_failed < 0) first_failed = r;
    int code = 0;
    if (p.size() > 1 && p[0] == kFailure && absl::SimpleAtoi(p.substr(1), &code) &&
        code == static_cast<int>(absl::StatusCode::kResourceExhausted)) {
      did_not_fit = true;
    }
  }
  if (first_failed < 0) return absl::OkStatus();
  const std::string what = absl::StrCat(
      "--device-tier shared: rank ", first_failed, " could not load its share of '", type, "' rows",
      did_not_fit ? " (a share did not fit its GPU)" : "", "; its log says why");
  return did_not_fit ? absl::ResourceExhaustedError(what) : absl::FailedPreconditionError(what);
}

absl::StatusOr<bool> WantVmmShares(const EnvLookup& env) {
  const absl::optional<std::string> v = env("GRAPHSHARD_SHARED_TIER_EXPORT");
  if (!v.has_value() || v->empty() || *v == "vmm") return true;
  if (*v == "ipc") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("GRAPHSHARD_SHARED_TIER_EXPORT=", *v, ": not ipc or vmm"));
}

std::string FormatVmmShareHandle(const VmmShareHandle& h) {
  return absl::StrCat("vmm:", h.socket, ":", h.pid, ":", h.size);
}

absl::optional<VmmShareHandle> ParseVmmShareHandle(absl::string_view handle) {
  const std::vector<absl::string_view> parts = absl::StrSplit(handle, ':');
  VmmShareHandle h;
  if (parts.size() != 4 || parts[0] != "vmm" || parts[1].empty() ||
      !absl::SimpleAtoi(parts[2], &h.pid) || h.pid <= 0 || !absl::SimpleAtoi(parts[3], &h.size) ||
      h.size == 0) {
    return absl::nullopt;
  }
  h.socket = std::string(parts[1]);
  return h;
}

}  // namespace graphshard::client
