#include "common/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <vector>

#include "common/checksum.h"
#include "common/file_util.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::common {
namespace {

using ::testing::HasSubstr;

TEST(NpyHeaderTest, EncodeParseRoundTrip) {
  for (DType dtype : {DType::kFloat32, DType::kInt64}) {
    for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{}, {0}, {7}, {3, 5}}) {
      std::string header = EncodeNpyHeader(dtype, shape);
      EXPECT_EQ(header.size() % 64, 0u);
      auto parsed = ParseNpyHeader(absl::Span<const char>(header.data(), header.size()), "x.npy");
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(parsed->dtype, dtype);
      EXPECT_EQ(parsed->shape, shape);
      EXPECT_EQ(parsed->data_offset, header.size());
    }
  }
}

TEST(NpyHeaderTest, BadMagicIsDataLossNamingFile) {
  std::string junk(128, 'x');
  auto parsed = ParseNpyHeader(absl::Span<const char>(junk.data(), junk.size()), "bad.npy");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("bad.npy"));
}

TEST(NpyHeaderTest, ShapeWhoseBytesOverflowIsDataLossNamingFile) {
  // 2^32 x 2^32 float32 elements: the element count alone wraps a 64-bit integer.
  std::string header = EncodeNpyHeader(DType::kFloat32, {int64_t{1} << 32, int64_t{1} << 32});
  auto parsed = ParseNpyHeader(absl::Span<const char>(header.data(), header.size()), "big.npy");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("big.npy"));
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("too large"));
}

TEST(NpyHeaderTest, ShapeFitsChecksSignAndBytes) {
  EXPECT_TRUE(ShapeFits({}, 8));
  EXPECT_TRUE(ShapeFits({0, int64_t{1} << 62}, 8));
  EXPECT_TRUE(ShapeFits({int64_t{1} << 30, 1 << 29}, 8));
  EXPECT_FALSE(ShapeFits({-1}, 4));
  EXPECT_FALSE(ShapeFits({int64_t{1} << 61}, 4));
  EXPECT_FALSE(ShapeFits({std::numeric_limits<int64_t>::min()}, 4));
}

TEST(NpyFileTest, WriteOpenRoundTripWithChecksum) {
  testing::ScratchDir tmp;
  const std::string path = tmp.Sub("a.npy");
  std::vector<float> values = {1.5f, -2.0f, 0.0f, 3.25f, 4.0f, 5.0f};
  auto crc = WriteNpy<float>(path, {2, 3}, values);
  ASSERT_TRUE(crc.ok()) << crc.status();
  auto file = NpyFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->header().shape, (std::vector<int64_t>{2, 3}));
  auto read = file->Values<float>();
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(std::vector<float>(read->begin(), read->end()), values);
  EXPECT_EQ(Crc32(file->file_bytes()), *crc);
  EXPECT_FALSE(file->Values<int64_t>().ok());
}

TEST(NpyWriterTest, FinishRejectsShortWrite) {
  testing::ScratchDir tmp;
  auto writer = NpyWriter::Create(tmp.Sub("b.npy"), DType::kInt64, {4});
  ASSERT_TRUE(writer.ok());
  std::vector<int64_t> three = {1, 2, 3};
  ASSERT_TRUE((*writer)->AppendValues<int64_t>(three).ok());
  EXPECT_FALSE((*writer)->Finish().ok());
}

TEST(NpyFileTest, MissingFileIsNotFound) {
  auto file = NpyFile::Open("/nonexistent/graphshard/x.npy");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("x.npy"));
}

}  // namespace
}  // namespace graphshard::common
