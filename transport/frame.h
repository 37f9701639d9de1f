#ifndef GRAPHSHARD_TRANSPORT_FRAME_H_
#define GRAPHSHARD_TRANSPORT_FRAME_H_

// The bulk transport's wire format (docs/TRANSPORT.md). Every request and answer is one frame:
//
//   header (kHeaderBytes, little-endian)
//     u32 magic "GSBT"  u16 version  u16 kind  u64 request id  u32 status code (absl)
//     u32 message bytes  u32 array count  u32 flags (bit 0: answer)  u64 payload bytes
//   payload (payload bytes)
//     status message (message bytes, UTF-8; empty when OK)
//     array table: u64 byte length per array
//     the arrays' bytes, back to back (raw little-endian values, no padding)
//
// so payload bytes = message bytes + 8 * array count + sum(array lengths). Nothing is
// allocated for a frame before its header passed DecodeHeader (sizes bounded by the caller's
// maximum frame size) and its table passed CheckArrayTable. Thread-safe: pure functions.

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace graphshard::transport {

inline constexpr uint32_t kFrameMagic = 0x54425347;  // "GSBT" as little-endian bytes
inline constexpr uint16_t kFrameVersion = 1;
inline constexpr size_t kHeaderBytes = 40;
inline constexpr uint32_t kMaxMessageBytes = 64 * 1024;
inline constexpr uint32_t kMaxArrays = 1 << 16;
inline constexpr uint32_t kFlagAnswer = 1;
// The first frame of a client connection to a server that requires the job token: one array,
// the token's credential for the address dialled (common::AddressCredential, never the token itself).
// Not answered; a wrong or missing one closes the connection with UNAUTHENTICATED before any
// request is served (docs/SECURITY.md).
inline constexpr uint16_t kHelloKind = 0xFFFF;
// Largest first frame a token-requiring server reads (a hello is tiny): an unauthenticated
// peer cannot make it allocate more.
inline constexpr uint64_t kMaxHelloBytes = 4096;

struct FrameHeader {
  uint16_t kind = 0;  // 0 is never a valid kind
  uint64_t request_id = 0;
  absl::StatusCode status = absl::StatusCode::kOk;
  uint32_t message_bytes = 0;
  uint32_t num_arrays = 0;
  uint32_t flags = 0;
  uint64_t payload_bytes = 0;
  bool answer() const { return (flags & kFlagAnswer) != 0; }
};

using HeaderBytes = std::array<char, kHeaderBytes>;

HeaderBytes EncodeHeader(const FrameHeader& header);

// The header in `bytes`, or InvalidArgument saying what is wrong: magic, version, kind 0,
// unknown flags or status code, a message or array count above the fixed caps, payload bytes
// above `max_payload_bytes`, or a message and table that do not fit the payload.
absl::StatusOr<FrameHeader> DecodeHeader(const HeaderBytes& bytes, uint64_t max_payload_bytes);

// Bytes of the arrays that follow the table: payload - message - table.
uint64_t ArrayBytes(const FrameHeader& header);

// InvalidArgument unless `lengths` (one per array) add up to ArrayBytes(header), computed
// without overflow.
absl::Status CheckArrayTable(const FrameHeader& header, absl::Span<const uint64_t> lengths);

// The payload bytes of a frame with this message and these array lengths.
uint64_t PayloadBytes(size_t message_bytes, absl::Span<const uint64_t> lengths);

}  // namespace graphshard::transport

#endif  // GRAPHSHARD_TRANSPORT_FRAME_H_
