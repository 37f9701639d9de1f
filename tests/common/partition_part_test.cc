// Every kind of damage to a partition folder is reported by PartitionPart::Load with a message
// that names the offending file.

#include "common/partition_part.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "common/file_util.h"
#include "common/manifest.h"
#include "common/npy.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::common {
namespace {

using ::testing::HasSubstr;

// All values of an .npy file (empty, with a test failure, if it cannot be read).
template <typename T>
std::vector<T> ReadValues(const std::string& path, std::vector<int64_t>* shape = nullptr) {
  auto file = NpyFile::Open(path);
  if (!file.ok()) {
    ADD_FAILURE() << file.status();
    return {};
  }
  auto values = file->Values<T>();
  if (!values.ok()) {
    ADD_FAILURE() << values.status();
    return {};
  }
  if (shape != nullptr) *shape = file->header().shape;
  return std::vector<T>(values->begin(), values->end());
}

class PartitionPartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.Sub("parts");
    auto m = testing::WriteTinyPartition(dir_, 2);
    ASSERT_TRUE(m.ok()) << m.status();
    manifest_ = *m;
  }
  std::string Path(const std::string& rel) const { return dir_ + "/" + rel; }
  // Loads part 0 and returns the error message (empty if it loaded).
  std::string LoadError() const {
    auto part = PartitionPart::Load(dir_, 0);
    return part.ok() ? "" : std::string(part.status().message());
  }

  testing::ScratchDir tmp_;
  std::string dir_;
  Manifest manifest_;
};

TEST_F(PartitionPartTest, IntactFolderLoads) {
  for (int p = 0; p < 2; ++p) {
    auto part = PartitionPart::Load(dir_, p);
    ASSERT_TRUE(part.ok()) << part.status();
    EXPECT_NE((*part)->FindNodes("node"), nullptr);
    EXPECT_NE((*part)->FindEdges("node__to__node"), nullptr);
  }
}

TEST_F(PartitionPartTest, ManifestFileShapeThatOverflowsIsRefusedNamingIt) {
  // The fuzzer's find: a files[] shape of INT64_MIN made the load's byte total overflow.
  const std::string rel = NodeFilePath(0, "node", "label.npy");
  manifest_.files[rel].shape = {std::numeric_limits<int64_t>::min()};
  ASSERT_TRUE(WriteManifest(dir_, manifest_).ok());
  const std::string error = LoadError();
  EXPECT_THAT(error, HasSubstr(rel));
  EXPECT_THAT(error, HasSubstr("shape"));
  manifest_.files[rel].shape = {int64_t{1} << 40, int64_t{1} << 40};
  ASSERT_TRUE(WriteManifest(dir_, manifest_).ok());
  EXPECT_THAT(LoadError(), HasSubstr("more bytes than fit"));
}

TEST_F(PartitionPartTest, MissingFileNamesIt) {
  const std::string rel = NodeFilePath(0, "node", "label.npy");
  ASSERT_TRUE(std::filesystem::remove(Path(rel)));
  auto part = PartitionPart::Load(dir_, 0);
  ASSERT_FALSE(part.ok());
  EXPECT_EQ(part.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(part.status().message()), HasSubstr(rel));
}

TEST_F(PartitionPartTest, TruncatedArrayNamesIt) {
  const std::string rel = EdgeFilePath(0, "node__to__node", "indices.npy");
  auto size = std::filesystem::file_size(Path(rel));
  std::filesystem::resize_file(Path(rel), size - 8);
  EXPECT_THAT(LoadError(), HasSubstr(rel));
}

TEST_F(PartitionPartTest, WrongShapeNamesIt) {
  // Same bytes, but stored as a flat [n * F] array instead of [n, F].
  const std::string rel = NodeFilePath(0, "node", "feat.npy");
  std::vector<float> values = ReadValues<float>(Path(rel));
  ASSERT_TRUE(WriteNpy<float>(Path(rel), {static_cast<int64_t>(values.size())}, values).ok());
  std::string err = LoadError();
  EXPECT_THAT(err, HasSubstr(rel));
  EXPECT_THAT(err, HasSubstr("shape"));
}

TEST_F(PartitionPartTest, WrongDTypeNamesIt) {
  const std::string rel = NodeFilePath(0, "node", "label.npy");
  std::vector<int64_t> shape;
  std::vector<float> as_float;
  for (int64_t x : ReadValues<int64_t>(Path(rel), &shape)) {
    as_float.push_back(static_cast<float>(x));
  }
  ASSERT_TRUE(WriteNpy<float>(Path(rel), shape, as_float).ok());
  std::string err = LoadError();
  EXPECT_THAT(err, HasSubstr(rel));
  EXPECT_THAT(err, HasSubstr("dtype"));
}

TEST_F(PartitionPartTest, ChecksumMismatchNamesIt) {
  const std::string rel = NodeFilePath(0, "node", "orig_id.npy");
  std::fstream f(Path(rel), std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-1, std::ios::end);
  char c = 0;
  f.get(c);
  f.seekp(-1, std::ios::end);
  f.put(static_cast<char>(c ^ 0x01));
  f.close();
  std::string err = LoadError();
  EXPECT_THAT(err, HasSubstr(rel));
  EXPECT_THAT(err, HasSubstr("checksum"));
}

TEST_F(PartitionPartTest, IdOutOfRangeNamesIt) {
  // A source id past the last node, with the manifest's checksum updated so the range check
  // (not the checksum) is what catches it.
  const std::string rel = EdgeFilePath(0, "node__to__node", "indices.npy");
  std::vector<int64_t> ids = ReadValues<int64_t>(Path(rel));
  ASSERT_FALSE(ids.empty());
  ids[0] = manifest_.node_types[0].num_nodes;
  auto crc = WriteNpy<int64_t>(Path(rel), {static_cast<int64_t>(ids.size())}, ids);
  ASSERT_TRUE(crc.ok());
  manifest_.files[rel].checksum = FormatCrc32(*crc);
  ASSERT_TRUE(WriteManifest(dir_, manifest_).ok());
  auto part = PartitionPart::Load(dir_, 0);
  ASSERT_FALSE(part.ok());
  EXPECT_EQ(part.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(part.status().message()), HasSubstr("indices.npy"));
}

TEST_F(PartitionPartTest, LabelOutOfRangeNamesIt) {
  const std::string rel = NodeFilePath(1, "node", "label.npy");
  std::vector<int64_t> shape;
  std::vector<int64_t> labels = ReadValues<int64_t>(Path(rel), &shape);
  ASSERT_FALSE(labels.empty());
  labels.back() = 99;
  auto crc = WriteNpy<int64_t>(Path(rel), shape, labels);
  ASSERT_TRUE(crc.ok());
  manifest_.files[rel].checksum = FormatCrc32(*crc);
  ASSERT_TRUE(WriteManifest(dir_, manifest_).ok());
  auto part = PartitionPart::Load(dir_, 1);
  ASSERT_FALSE(part.ok());
  EXPECT_THAT(std::string(part.status().message()), HasSubstr(rel));
}

TEST_F(PartitionPartTest, InvalidManifestJsonNamesIt) {
  ASSERT_TRUE(WriteFileAtomically(Path(kManifestFileName), "{\"format_version\": 1,").ok());
  auto part = PartitionPart::Load(dir_, 0);
  ASSERT_FALSE(part.ok());
  EXPECT_EQ(part.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(part.status().message()), HasSubstr(kManifestFileName));
}

TEST_F(PartitionPartTest, ManifestMissingFieldNamesFileAndField) {
  auto text = ReadFileToString(Path(kManifestFileName));
  ASSERT_TRUE(text.ok());
  nlohmann::json j = nlohmann::json::parse(*text);
  j.erase("num_parts");
  ASSERT_TRUE(WriteFileAtomically(Path(kManifestFileName), j.dump()).ok());
  std::string err = LoadError();
  EXPECT_THAT(err, HasSubstr(kManifestFileName));
  EXPECT_THAT(err, HasSubstr("num_parts"));
}

TEST_F(PartitionPartTest, MissingManifestIsNotFound) {
  ASSERT_TRUE(std::filesystem::remove(Path(kManifestFileName)));
  auto part = PartitionPart::Load(dir_, 0);
  ASSERT_FALSE(part.ok());
  EXPECT_EQ(part.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(part.status().message()), HasSubstr(kManifestFileName));
}

TEST_F(PartitionPartTest, PartOutOfRangeIsRejected) {
  EXPECT_FALSE(PartitionPart::Load(dir_, 2).ok());
  EXPECT_FALSE(PartitionPart::Load(dir_, -1).ok());
}

}  // namespace
}  // namespace graphshard::common
