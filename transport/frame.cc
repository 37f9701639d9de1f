#include "transport/frame.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/bytes.h"

namespace graphshard::transport {
namespace {

template <typename T>
void Put(char* out, size_t offset, T value) {
  std::memcpy(out + offset, &value, sizeof(T));  // little-endian host (common/bytes.h)
}

template <typename T>
T Get(const char* in, size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

constexpr uint32_t kMaxStatusCode = 16;  // absl::StatusCode::kUnauthenticated

}  // namespace

HeaderBytes EncodeHeader(const FrameHeader& h) {
  HeaderBytes out{};
  Put<uint32_t>(out.data(), 0, kFrameMagic);
  Put<uint16_t>(out.data(), 4, kFrameVersion);
  Put<uint16_t>(out.data(), 6, h.kind);
  Put<uint64_t>(out.data(), 8, h.request_id);
  Put<uint32_t>(out.data(), 16, static_cast<uint32_t>(h.status));
  Put<uint32_t>(out.data(), 20, h.message_bytes);
  Put<uint32_t>(out.data(), 24, h.num_arrays);
  Put<uint32_t>(out.data(), 28, h.flags);
  Put<uint64_t>(out.data(), 32, h.payload_bytes);
  return out;
}

absl::StatusOr<FrameHeader> DecodeHeader(const HeaderBytes& bytes, uint64_t max_payload_bytes) {
  const char* in = bytes.data();
  const uint32_t magic = Get<uint32_t>(in, 0);
  if (magic != kFrameMagic) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "bad frame magic 0x%08x (expected 0x%08x: not a graphshard bulk connection?)", magic,
        kFrameMagic));
  }
  const uint16_t version = Get<uint16_t>(in, 4);
  if (version != kFrameVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame version ", version, " is not supported (this build speaks ",
                     kFrameVersion, ")"));
  }
  FrameHeader h;
  h.kind = Get<uint16_t>(in, 6);
  h.request_id = Get<uint64_t>(in, 8);
  const uint32_t status = Get<uint32_t>(in, 16);
  h.message_bytes = Get<uint32_t>(in, 20);
  h.num_arrays = Get<uint32_t>(in, 24);
  h.flags = Get<uint32_t>(in, 28);
  h.payload_bytes = Get<uint64_t>(in, 32);
  if (h.kind == 0) return absl::InvalidArgumentError("frame kind 0 is not a request kind");
  if ((h.flags & ~kFlagAnswer) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("unknown frame flags 0x%x", h.flags));
  }
  if (status > kMaxStatusCode) {
    return absl::InvalidArgumentError(absl::StrCat("unknown status code ", status));
  }
  h.status = static_cast<absl::StatusCode>(status);
  if (h.message_bytes > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("status message of ", h.message_bytes,
                                                   " bytes exceeds ", kMaxMessageBytes));
  }
  if (h.num_arrays > kMaxArrays) {
    return absl::InvalidArgumentError(
        absl::StrCat(h.num_arrays, " arrays in one frame exceeds ", kMaxArrays));
  }
  if (h.payload_bytes > max_payload_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame of ", h.payload_bytes, " payload bytes exceeds the maximum frame size (",
                     max_payload_bytes, " bytes)"));
  }
  // Both terms are bounded above (64 KiB + 512 KiB): no overflow.
  const uint64_t fixed = uint64_t{h.message_bytes} + 8 * uint64_t{h.num_arrays};
  if (fixed > h.payload_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload of ", h.payload_bytes, " bytes cannot hold a ", h.message_bytes,
                     "-byte message and a table of ", h.num_arrays, " arrays"));
  }
  return h;
}

uint64_t ArrayBytes(const FrameHeader& h) {
  return h.payload_bytes - uint64_t{h.message_bytes} - 8 * uint64_t{h.num_arrays};
}

absl::Status CheckArrayTable(const FrameHeader& h, absl::Span<const uint64_t> lengths) {
  if (lengths.size() != h.num_arrays) {
    return absl::InvalidArgumentError(
        absl::StrCat("array table has ", lengths.size(), " entries, header says ", h.num_arrays));
  }
  const uint64_t total = ArrayBytes(h);
  uint64_t used = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (!common::RangeFits(used, lengths[i], total)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "array ", i, " of ", lengths[i], " bytes overruns the frame's ", total, " array bytes"));
    }
    used += lengths[i];
  }
  if (used != total) {
    return absl::InvalidArgumentError(absl::StrCat("arrays add up to ", used,
                                                   " bytes, the frame carries ", total));
  }
  return absl::OkStatus();
}

uint64_t PayloadBytes(size_t message_bytes, absl::Span<const uint64_t> lengths) {
  uint64_t n = message_bytes + 8 * lengths.size();
  for (uint64_t l : lengths) n += l;
  return n;
}

}  // namespace graphshard::transport
