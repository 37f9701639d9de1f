#include "transport/frame.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace graphshard::transport {
namespace {

FrameHeader Sample() {
  FrameHeader h;
  h.kind = 2;
  h.request_id = 0x0123456789abcdefULL;
  h.status = absl::StatusCode::kNotFound;
  h.message_bytes = 5;
  h.num_arrays = 3;
  h.flags = kFlagAnswer;
  h.payload_bytes = 5 + 3 * 8 + 100;
  return h;
}

TEST(FrameTest, HeaderRoundTripsEveryField) {
  const FrameHeader h = Sample();
  HeaderBytes bytes = EncodeHeader(h);
  uint32_t magic = 0;
  std::memcpy(&magic, bytes.data(), 4);
  EXPECT_EQ(magic, kFrameMagic);
  EXPECT_EQ(std::string(bytes.data(), 4), "GSBT");
  absl::StatusOr<FrameHeader> back = DecodeHeader(bytes, 1 << 20);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, h.kind);
  EXPECT_EQ(back->request_id, h.request_id);
  EXPECT_EQ(back->status, h.status);
  EXPECT_EQ(back->message_bytes, h.message_bytes);
  EXPECT_EQ(back->num_arrays, h.num_arrays);
  EXPECT_TRUE(back->answer());
  EXPECT_EQ(back->payload_bytes, h.payload_bytes);
  EXPECT_EQ(ArrayBytes(*back), 100u);
}

// Each corruption is refused with a message naming what is wrong.
TEST(FrameTest, DecodeRefusesMalformedHeaders) {
  struct Case {
    const char* name;
    size_t offset;
    std::vector<char> bytes;
    const char* expect;
  };
  const uint64_t huge = uint64_t{1} << 40;
  std::vector<char> huge_bytes(8);
  std::memcpy(huge_bytes.data(), &huge, 8);
  const std::vector<Case> cases = {
      {"magic", 0, {'H', 'T', 'T', 'P'}, "bad frame magic"},
      {"version", 4, {9, 0}, "frame version 9"},
      {"kind", 6, {0, 0}, "kind 0"},
      {"status", 16, {99, 0, 0, 0}, "unknown status code 99"},
      {"message", 20, {1, 0, 1, 0}, "status message of 65537 bytes"},
      {"arrays", 24, {0, 0, 2, 0}, "arrays in one frame"},
      {"flags", 28, {4, 0, 0, 0}, "unknown frame flags"},
      {"oversized", 32, huge_bytes, "exceeds the maximum frame size"},
      {"table", 32, {10, 0, 0, 0, 0, 0, 0, 0}, "cannot hold"},
  };
  for (const Case& c : cases) {
    HeaderBytes bytes = EncodeHeader(Sample());
    std::memcpy(bytes.data() + c.offset, c.bytes.data(), c.bytes.size());
    absl::StatusOr<FrameHeader> h = DecodeHeader(bytes, 1 << 20);
    ASSERT_FALSE(h.ok()) << c.name;
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(h.status().message().find(c.expect), absl::string_view::npos)
        << c.name << ": " << h.status();
  }
}

TEST(FrameTest, ArrayTableMustAddUpToThePayload) {
  const FrameHeader h = Sample();  // 100 array bytes in 3 arrays
  EXPECT_TRUE(CheckArrayTable(h, std::vector<uint64_t>{50, 0, 50}).ok());
  EXPECT_FALSE(CheckArrayTable(h, std::vector<uint64_t>{50, 0, 49}).ok());
  EXPECT_FALSE(CheckArrayTable(h, std::vector<uint64_t>{50, 51, 0}).ok());
  EXPECT_FALSE(CheckArrayTable(h, std::vector<uint64_t>{100, 0}).ok());
  // Lengths that would wrap around 2^64 when added are refused, not summed.
  EXPECT_FALSE(CheckArrayTable(h, std::vector<uint64_t>{~uint64_t{0}, 101, 0}).ok());
  EXPECT_EQ(PayloadBytes(5, std::vector<uint64_t>{50, 0, 50}), h.payload_bytes);
}

}  // namespace
}  // namespace graphshard::transport
