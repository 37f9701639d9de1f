#include "common/checksum.h"

#include <zlib.h>

#include <algorithm>

#include "absl/strings/str_format.h"

namespace graphshard::common {

uint32_t Crc32(absl::Span<const char> bytes, uint32_t crc) {
  // zlib takes a uInt length: feed large buffers in 1 GiB pieces.
  constexpr size_t kPiece = size_t{1} << 30;
  uLong value = crc;
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    size_t n = std::min(left, kPiece);
    value = crc32(value, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n));
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(value);
}

std::string FormatCrc32(uint32_t crc) { return absl::StrFormat("crc32:%08x", crc); }

}  // namespace graphshard::common
