#include "client/tensorboard.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/scratch_dir.h"

namespace graphshard::client {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Splits TFRecord framing, checking both CRCs; fails the test on a bad frame.
std::vector<std::string> Records(const std::string& blob) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < blob.size()) {
    EXPECT_GE(blob.size() - pos, 16u);
    if (blob.size() - pos < 16) break;
    uint64_t length;
    uint32_t length_crc, data_crc;
    std::memcpy(&length, blob.data() + pos, 8);
    std::memcpy(&length_crc, blob.data() + pos + 8, 4);
    EXPECT_EQ(length_crc, MaskedCrc32c(blob.substr(pos, 8)));
    const std::string payload = blob.substr(pos + 12, length);
    std::memcpy(&data_crc, blob.data() + pos + 12 + length, 4);
    EXPECT_EQ(data_crc, MaskedCrc32c(payload));
    out.push_back(payload);
    pos += 12 + length + 4;
  }
  return out;
}

TEST(Crc32c, MatchesTheStandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);  // RFC 3720's CRC-32C check value
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(EventFileWriter, WritesFramedEventsWithTheirTagsAndValues) {
  const graphshard::testing::ScratchDir scratch("tensorboard_test");
  const std::string dir = scratch / "sub";  // made by the writer
  auto w = EventFileWriter::Create(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->WriteScalars(3, {{"train/loss", 0.25f}, {"perf/seeds_per_s", 1000.0f}}).ok());
  const std::string path = (*w)->path();
  EXPECT_EQ(std::filesystem::path(path).parent_path(), std::filesystem::path(dir));
  EXPECT_EQ(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u);
  w->reset();
  const std::vector<std::string> records = Records(ReadAll(path));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_NE(records[0].find("brain.Event:2"), std::string::npos);
  // The scalar event is exactly what ScalarEvent encodes, tags and float values included.
  EXPECT_NE(records[1].find("train/loss"), std::string::npos);
  float loss = 0.25f;
  EXPECT_NE(records[1].find(std::string(reinterpret_cast<const char*>(&loss), 4)),
            std::string::npos);
}

TEST(EventFileWriter, UnwritableDirectoryIsAnErrorNamingIt) {
  const graphshard::testing::ScratchDir scratch("tensorboard_test");
  const std::string file = scratch / "tb_writer_plain_file";
  std::ofstream(file) << "x";
  auto w = EventFileWriter::Create(file + "/dir");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(w.status().message().find("tb_writer_plain_file"), std::string::npos) << w.status();
}

}  // namespace
}  // namespace graphshard::client
