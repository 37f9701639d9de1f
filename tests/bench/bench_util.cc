#include "tests/bench/bench_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace graphshard::bench {
namespace {

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

double MemcpyBytesPerSecond(size_t bytes, int reps) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, Seconds(t0, t1));
    src[r % bytes] = static_cast<char>(dst[(r * 7) % bytes] + 1);  // keep the copy observable
  }
  return static_cast<double>(bytes) / best;
}

double TcpLoopbackBytesPerSecond(size_t total_bytes) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listener);
    return 0;
  }
  constexpr size_t kChunk = 1 << 20;
  std::thread sender([&] {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(s);
      return;
    }
    std::vector<char> buf(kChunk, 7);
    size_t sent = 0;
    while (sent < total_bytes) {
      ssize_t n = ::send(s, buf.data(), std::min(kChunk, total_bytes - sent), 0);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    ::close(s);
  });
  int conn = ::accept(listener, nullptr, nullptr);
  std::vector<char> buf(kChunk);
  size_t got = 0;
  auto t0 = std::chrono::steady_clock::now();
  while (conn >= 0) {
    ssize_t n = ::recv(conn, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  auto t1 = std::chrono::steady_clock::now();
  sender.join();
  if (conn >= 0) ::close(conn);
  ::close(listener);
  return static_cast<double>(got) / Seconds(t0, t1);
}

void PrintResult(const std::string& name, double value, const std::string& unit) {
  std::printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"}\n", name.c_str(), value,
              unit.c_str());
  std::fflush(stdout);
}

void PrintCompared(const std::string& name, double value, const std::string& unit,
                   const std::string& baseline_name, double baseline_value) {
  std::printf(
      "{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"baseline\": \"%s\", "
      "\"baseline_value\": %.6g, \"ratio\": %.4g}\n",
      name.c_str(), value, unit.c_str(), baseline_name.c_str(), baseline_value,
      baseline_value > 0 ? value / baseline_value : 0.0);
  std::fflush(stdout);
}

bool ParseFanouts(const std::string& text, std::vector<int32_t>* out) {
  out->clear();
  for (absl::string_view s : absl::StrSplit(text, ',')) {
    int32_t x = 0;
    if (!absl::SimpleAtoi(s, &x)) return false;
    out->push_back(x);
  }
  return true;
}

bool ParseCounts(const std::string& text, std::vector<int>* out) {
  out->clear();
  for (absl::string_view s : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int x = 0;
    if (!absl::SimpleAtoi(s, &x) || x < 1) return false;
    out->push_back(x);
  }
  return !out->empty();
}

}  // namespace graphshard::bench
