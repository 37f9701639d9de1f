#ifndef GRAPHSHARD_COMMON_BYTES_H_
#define GRAPHSHARD_COMMON_BYTES_H_

// Arrays as raw bytes, the wire format of every array in proto/graphshard.proto (little-endian,
// the host's layout: big-endian hosts are refused at compile time), and the one overflow-safe
// check that a byte range lies inside a buffer (shared-memory offsets come from the other side
// of a socket). Thread-safe: pure functions.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace graphshard::common {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; add byte swapping for this host");

// Whether [offset, offset + length) lies inside [0, size), for any values: offset + length is
// never computed, so it cannot wrap around.
constexpr bool RangeFits(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

template <typename T>
std::string ToBytes(absl::Span<const T> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// The values in `bytes`. A length that is not a multiple of sizeof(T) is an error with `code`
// (InvalidArgument for a request, DataLoss for an answer), naming `what`.
template <typename T>
absl::StatusOr<std::vector<T>> FromBytes(
    absl::string_view bytes, absl::string_view what,
    absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  if (bytes.size() % sizeof(T) != 0) {
    return absl::Status(
        code, absl::StrCat(what, ": ", bytes.size(), " bytes is not a multiple of ", sizeof(T)));
  }
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_BYTES_H_
