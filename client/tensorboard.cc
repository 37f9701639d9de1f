#include "client/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace graphshard::client {
namespace {

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

// Protobuf wire format: the few encodings an Event needs.
void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void PutTag(std::string& out, int field, int wire_type) {
  PutVarint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}
template <typename T>
void PutFixed(std::string& out, T v) {  // little-endian (x86-64, aarch64)
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}
void PutBytes(std::string& out, int field, absl::string_view bytes) {
  PutTag(out, field, 2);
  PutVarint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

// Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
std::string EventHeader(double wall_time, int64_t step) {
  std::string e;
  PutTag(e, 1, 1);
  PutFixed<double>(e, wall_time);
  PutTag(e, 2, 0);
  PutVarint(e, static_cast<uint64_t>(step));
  return e;
}

double WallTime() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

}  // namespace

uint32_t Crc32c(absl::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t MaskedCrc32c(absl::string_view data) {
  const uint32_t c = Crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::string TfRecord(absl::string_view payload) {
  std::string length;
  PutFixed<uint64_t>(length, payload.size());
  std::string out = length;
  PutFixed<uint32_t>(out, MaskedCrc32c(length));
  out.append(payload.data(), payload.size());
  PutFixed<uint32_t>(out, MaskedCrc32c(payload));
  return out;
}

std::string ScalarEvent(double wall_time, int64_t step,
                        const std::vector<std::pair<std::string, float>>& scalars) {
  // Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    PutBytes(v, 1, tag);
    PutTag(v, 2, 5);
    PutFixed<float>(v, value);
    PutBytes(summary, 1, v);
  }
  std::string e = EventHeader(wall_time, step);
  PutBytes(e, 5, summary);
  return e;
}

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("--tensorboard ", dir, ": ", ec.message()));
  }
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const std::string path = absl::StrCat(dir, "/events.out.tfevents.",
                                        absl::ToUnixSeconds(absl::Now()), ".", host, ".", getpid());
  absl::StatusOr<std::unique_ptr<common::AppendFile>> file =
      common::AppendFile::Open(path, /*truncate=*/true);
  if (!file.ok()) {
    return absl::InternalError(absl::StrCat("--tensorboard: ", file.status().message()));
  }
  std::unique_ptr<EventFileWriter> w(new EventFileWriter(*std::move(file)));
  std::string version = EventHeader(WallTime(), 0);
  PutBytes(version, 3, "brain.Event:2");
  if (absl::Status s = w->Append(version); !s.ok()) return s;
  return w;
}

absl::Status EventFileWriter::WriteScalars(
    int64_t step, const std::vector<std::pair<std::string, float>>& scalars) {
  return Append(ScalarEvent(WallTime(), step, scalars));
}

absl::Status EventFileWriter::Append(absl::string_view payload) {
  return file_->Append(TfRecord(payload));
}

}  // namespace graphshard::client
