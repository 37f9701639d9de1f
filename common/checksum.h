#ifndef GRAPHSHARD_COMMON_CHECKSUM_H_
#define GRAPHSHARD_COMMON_CHECKSUM_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"

namespace graphshard::common {

// CRC-32 (zlib's polynomial, as Python's zlib.crc32) of bytes, continuing from `crc`.
uint32_t Crc32(absl::Span<const char> bytes, uint32_t crc = 0);

// "crc32:%08x": the form stored in the manifest.
std::string FormatCrc32(uint32_t crc);

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_CHECKSUM_H_
