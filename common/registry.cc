#include "common/registry.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "absl/base/const_init.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace graphshard::common {
namespace {

// A host name or IPv4 address (letters, digits, '.', '-', '_'), or an IPv6 address in brackets:
// no scheme ("unix:", "dns:"), path or other gRPC target syntax.
bool IsPlainHost(absl::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
      return absl::ascii_isxdigit(c) || c == ':' || c == '.';
    });
  }
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_';
  });
}

absl::Status CheckAddress(absl::string_view address, absl::string_view where) {
  size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || colon == 0 || !IsPlainHost(address.substr(0, colon)) ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": '", address, "' is not host:port with a port in 1..65535"));
  }
  return absl::OkStatus();
}

// Writes `line` to stderr the first time this process sees it.
void WarnOnce(const std::string& line) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* said = new absl::flat_hash_set<std::string>();
  absl::MutexLock lock(&mu);
  if (said->size() < 1024 && said->insert(line).second) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace

absl::StatusOr<std::string> ReadRegistryEntry(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::string address(absl::StripAsciiWhitespace(text));
  absl::Status s = CheckAddress(address, path);
  if (!s.ok()) return absl::DataLossError(s.message());
  return address;
}

std::string RegistryFile(const std::string& dir, int part, int replica) {
  if (replica == 0) return absl::StrCat(dir, "/part_", part);
  return absl::StrCat(dir, "/part_", part, ".r", replica);
}

absl::Status PublishAddress(const std::string& dir, int part, absl::string_view address,
                            int replica) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat(dir, ": cannot create registry: ", std::strerror(errno)));
  }
  return WriteFileAtomically(RegistryFile(dir, part, replica), absl::StrCat(address, "\n"));
}

void RemoveAddress(const std::string& dir, int part, int replica) {
  ::unlink(RegistryFile(dir, part, replica).c_str());
}

absl::StatusOr<std::string> LookupAddress(const std::string& dir, int part) {
  std::string path = RegistryFile(dir, part);
  absl::StatusOr<std::string> address = ReadRegistryEntry(path);
  if (absl::IsNotFound(address.status())) {
    return absl::NotFoundError(absl::StrCat("server for part ", part, " is not registered (",
                                            path, " does not exist)"));
  }
  return address;
}

absl::StatusOr<std::vector<std::string>> LookupReplicas(const std::string& dir, int part) {
  // Replica indices present: part_<k> is 0, part_<k>.r<r> is r (temp files and others ignored).
  std::vector<int> replicas;
  const std::string base = absl::StrCat("part_", part);
  if (DIR* d = ::opendir(dir.c_str()); d != nullptr) {
    while (const dirent* e = ::readdir(d)) {
      absl::string_view name(e->d_name);
      int r = 0;
      if (name == base) {
        replicas.push_back(0);
      } else if (absl::ConsumePrefix(&name, base) && absl::ConsumePrefix(&name, ".r") &&
                 !name.empty() && absl::ascii_isdigit(name[0]) && absl::SimpleAtoi(name, &r) &&
                 r > 0) {
        replicas.push_back(r);
      }
    }
    ::closedir(d);
  }
  std::sort(replicas.begin(), replicas.end());
  std::vector<std::string> out;
  absl::Status first_bad;
  for (int r : replicas) {
    absl::StatusOr<std::string> address = ReadRegistryEntry(RegistryFile(dir, part, r));
    if (absl::IsNotFound(address.status())) continue;  // removed since the listing
    if (!address.ok()) {
      // One bad entry (not host:port, unreadable) must not hide the part's good ones: skipped,
      // said once per file and reason.
      WarnOnce(absl::StrCat("graphshard: registry entry skipped: ", address.status().message()));
      if (first_bad.ok()) first_bad = address.status();
      continue;
    }
    out.push_back(*std::move(address));
  }
  if (out.empty() && !first_bad.ok()) return first_bad;
  if (out.empty()) {
    return absl::NotFoundError(absl::StrCat("server for part ", part, " is not registered (",
                                            RegistryFile(dir, part), " does not exist)"));
  }
  return out;
}

absl::StatusOr<std::vector<RegistryEntry>> ListRegistry(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("registry ", dir, ": cannot read it: ", std::strerror(errno)));
  }
  std::vector<RegistryEntry> out;
  while (const dirent* e = ::readdir(d)) {
    absl::string_view name(e->d_name);
    if (!absl::ConsumePrefix(&name, "part_")) continue;
    const size_t dot = name.find('.');
    absl::string_view part_text = name.substr(0, dot);
    RegistryEntry entry;
    if (part_text.empty() || !absl::ascii_isdigit(part_text[0]) ||
        !absl::SimpleAtoi(part_text, &entry.part) || entry.part < 0) {
      continue;
    }
    if (dot != absl::string_view::npos) {
      absl::string_view rest = name.substr(dot);
      if (!absl::ConsumePrefix(&rest, ".r") || rest.empty() || !absl::ascii_isdigit(rest[0]) ||
          !absl::SimpleAtoi(rest, &entry.replica) || entry.replica <= 0) {
        continue;
      }
    }
    out.push_back(entry);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const RegistryEntry& a, const RegistryEntry& b) {
    return a.part != b.part ? a.part < b.part : a.replica < b.replica;
  });
  return out;
}

absl::StatusOr<std::vector<std::string>> SplitReplicas(absl::string_view entry) {
  std::vector<std::string> out;
  for (absl::string_view a : absl::StrSplit(entry, '+')) {
    a = absl::StripAsciiWhitespace(a);
    RETURN_IF_ERROR(CheckAddress(a, absl::StrCat("--servers entry '", entry, "'")));
    out.emplace_back(a);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ParseAddressList(absl::string_view list) {
  std::vector<std::string> out;
  for (absl::string_view a : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    a = absl::StripAsciiWhitespace(a);
    absl::StatusOr<std::vector<std::string>> replicas = SplitReplicas(a);
    if (!replicas.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--servers entry ", out.size(), ": ", replicas.status().message()));
    }
    out.emplace_back(a);
  }
  if (out.empty()) return absl::InvalidArgumentError("--servers: empty list");
  return out;
}

absl::Status CheckRegistryFolder(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("registry ", dir, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("registry ", dir, ": not a folder"));
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "registry %s (owner uid %d, mode %04o): with a job token the registry must be a folder "
        "of this user (uid %d) that no one else may write (chmod 700 %s), or any user could "
        "publish a server in it",
        dir, st.st_uid, st.st_mode & 07777, ::geteuid(), dir));
  }
  return absl::OkStatus();
}

}  // namespace graphshard::common
