#include "common/registry.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace graphshard::common {
namespace {

absl::Status CheckAddress(absl::string_view address, absl::string_view where) {
  size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": '", address, "' is not host:port with a port in 1..65535"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RegistryFile(const std::string& dir, int part) {
  return absl::StrCat(dir, "/part_", part);
}

absl::Status PublishAddress(const std::string& dir, int part, absl::string_view address) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat(dir, ": cannot create registry: ", std::strerror(errno)));
  }
  return WriteFileAtomically(RegistryFile(dir, part), absl::StrCat(address, "\n"));
}

void RemoveAddress(const std::string& dir, int part) {
  ::unlink(RegistryFile(dir, part).c_str());
}

absl::StatusOr<std::string> LookupAddress(const std::string& dir, int part) {
  std::string path = RegistryFile(dir, part);
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) {
      return absl::NotFoundError(absl::StrCat("server for part ", part, " is not registered (",
                                              path, " does not exist)"));
    }
    return text.status();
  }
  std::string address(absl::StripAsciiWhitespace(*text));
  absl::Status s = CheckAddress(address, path);
  if (!s.ok()) return absl::DataLossError(s.message());
  return address;
}

absl::StatusOr<std::vector<std::string>> ParseAddressList(absl::string_view list) {
  std::vector<std::string> out;
  for (absl::string_view a : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    a = absl::StripAsciiWhitespace(a);
    RETURN_IF_ERROR(CheckAddress(a, absl::StrCat("--servers entry ", out.size())));
    out.emplace_back(a);
  }
  if (out.empty()) return absl::InvalidArgumentError("--servers: empty list");
  return out;
}

}  // namespace graphshard::common
