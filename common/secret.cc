#include "common/secret.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace graphshard::common {

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Every byte of `a` is compared (against b's byte or a zero), so the time depends on
  // a.size() only; a length mismatch is folded in at the end.
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    const unsigned char other = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (static_cast<unsigned char>(a[i]) ^ other));
  }
  return diff == 0;
}

absl::StatusOr<std::string> ReadPrivateFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s: mode %04o lets other users read or write it; a secret must be 0600 or 0400 "
        "(chmod 600 %s)",
        path, st.st_mode & 07777, path));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": owned by uid ", st.st_uid, ", not by this user (uid ",
                     ::geteuid(), ")"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot be opened"));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

absl::StatusOr<std::string> LoadJobToken(const std::string& token_file) {
  std::string token;
  std::string source;
  if (!token_file.empty()) {
    absl::StatusOr<std::string> contents = ReadPrivateFile(token_file);
    if (!contents.ok()) return contents.status();
    token = *std::move(contents);
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    source = absl::StrCat("--token-file ", token_file);
  } else if (const char* env = std::getenv(kTokenEnvVar); env != nullptr && *env != '\0') {
    token = env;
    source = kTokenEnvVar;
  } else {
    return std::string();
  }
  if (token.size() < static_cast<size_t>(kMinTokenChars)) {
    return absl::InvalidArgumentError(absl::StrCat("the job token from ", source, " has ",
                                                   token.size(), " characters; at least ",
                                                   kMinTokenChars, " are needed"));
  }
  for (const char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(absl::StrCat(
          "the job token from ", source, " holds a space or non-printable character"));
    }
  }
  return token;
}

namespace {

// Lower-case hex of the first `bytes` bytes of HMAC-SHA256(key, message).
std::string HmacHex(absl::string_view key, absl::string_view message, size_t bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(bytes, length); ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 15];
  }
  return hex;
}

}  // namespace

std::string AddressCredential(absl::string_view token, absl::string_view address) {
  return absl::StrCat("gs2.", HmacHex(token,
                                      absl::StrCat("graphshard address credential v2\nhost ",
                                                   absl::AsciiStrToLower(HostOfAddress(address)),
                                                   "\nport ", PortOfAddress(address)),
                                      32));
}

absl::string_view HostOfAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return address;
  // "::1" alone (no port) has colons too: a host with a port ends in ":digits" after a ']' or
  // a host without colons.
  const absl::string_view host = address.substr(0, colon);
  if (host.find(':') != absl::string_view::npos && !absl::StartsWith(host, "[")) return address;
  return host;
}

namespace {

bool IsLoopbackHost(absl::string_view h) {
  return absl::StartsWith(h, "127.") || h == "localhost" || h == "[::1]" || h == "::1";
}

void AddInterfaceAddresses(std::vector<std::string>& hosts) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) {
        hosts.push_back(text);
      }
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      if (::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text)) != nullptr) {
        hosts.push_back(absl::StrCat("[", text, "]"));
      }
    }
  }
  ::freeifaddrs(list);
}

}  // namespace

std::vector<std::string> CredentialHosts(absl::string_view bind_host) {
  const std::string h = absl::AsciiStrToLower(bind_host);
  const std::vector<std::string> loopback = {"127.0.0.1", "localhost", "[::1]"};
  std::vector<std::string> hosts;
  if (h.empty() || h == "0.0.0.0" || h == "[::]" || h == "::") {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) == 0) hosts.push_back(absl::AsciiStrToLower(name));
    AddInterfaceAddresses(hosts);
    hosts.insert(hosts.end(), loopback.begin(), loopback.end());
  } else if (IsLoopbackHost(h)) {
    hosts = loopback;
    hosts.push_back(h);
  } else {
    hosts.push_back(h);
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  return hosts;
}

std::string SegmentTag(absl::string_view key, absl::string_view stem) {
  return HmacHex(key, absl::StrCat("graphshard segment v1\n", stem), 8);
}

int PortOfAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return -1;
  const absl::string_view digits = address.substr(colon + 1);
  int port = 0;
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(digits, &port) || port > 65535) {
    return -1;
  }
  return port;
}

}  // namespace graphshard::common
