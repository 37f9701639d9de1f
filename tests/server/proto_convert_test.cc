// The server's proto conversions: shared-memory ranges sent by a peer are checked without
// overflow (common::RangeFits).
#include "server/proto_convert.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "shm/ring.h"

namespace graphshard::server {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

constexpr char kKey[] = "proto-convert-test-key";

std::string Prefix() { return absl::StrCat("/graphshard-", ::getpid(), "-c0de-"); }

// A GatherFeaturesResponse whose one block's features claim [offset, offset + length) of a
// fresh 4096-byte segment (named after `id`, for kKey).
absl::StatusOr<std::vector<engine::FeatureBlock>> Convert(int id, uint64_t offset,
                                                          uint64_t length) {
  const std::string name = shm::TaggedSegmentName(absl::StrCat(Prefix(), id), kKey);
  absl::StatusOr<std::unique_ptr<shm::ShmSegment>> segment = shm::ShmSegment::Create(name, 4096);
  if (!segment.ok()) return segment.status();
  std::memset((*segment)->data(), 7, 4096);
  v1::GatherFeaturesResponse response;
  response.set_shm_name(name);
  response.set_shm_size(4096);
  v1::FeatureBlock* block = response.add_items();
  block->set_feat_dim(1);
  block->mutable_features()->set_shm_offset(offset);
  block->mutable_features()->set_shm_length(length);
  return FromProto(response, Prefix(), kKey);
}

TEST(ProtoConvertTest, FeatureRangeInsideTheSegmentIsRead) {
  absl::StatusOr<std::vector<engine::FeatureBlock>> blocks = Convert(0, 4000, 96);
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  ASSERT_EQ(blocks->size(), 1u);
  EXPECT_EQ((*blocks)[0].features.size(), 96u);
}

TEST(ProtoConvertTest, FeatureRangeOutsideTheSegmentIsDataLossEvenWhenTheSumWraps) {
  int id = 1;
  for (const auto& [offset, length] : std::vector<std::pair<uint64_t, uint64_t>>{
           {4000, 97}, {kU64Max - 10, 64}, {64, kU64Max - 10}, {kU64Max, kU64Max}}) {
    absl::StatusOr<std::vector<engine::FeatureBlock>> blocks = Convert(id++, offset, length);
    EXPECT_EQ(blocks.status().code(), absl::StatusCode::kDataLoss) << offset << " +" << length;
  }
}

TEST(ProtoConvertTest, ASegmentNotNamedForTheAskersKeyIsNeitherOpenedNorUnlinked) {
  for (const std::string& name : {shm::TaggedSegmentName(absl::StrCat(Prefix(), 7), "other-key"),
                                  absl::StrCat(Prefix(), "host-proof")}) {
    absl::StatusOr<std::unique_ptr<shm::ShmSegment>> segment = shm::ShmSegment::Create(name, 64);
    ASSERT_TRUE(segment.ok()) << segment.status();
    v1::GatherFeaturesResponse response;
    response.set_shm_name(name);
    response.set_shm_size(64);
    const absl::StatusOr<std::vector<engine::FeatureBlock>> blocks =
        FromProto(response, Prefix(), kKey);
    EXPECT_EQ(blocks.status().code(), absl::StatusCode::kDataLoss) << name;
    const int fd = ::shm_open(name.c_str(), O_RDONLY, 0);
    EXPECT_GE(fd, 0) << name << " was unlinked";
    if (fd >= 0) ::close(fd);
    shm::UnlinkShm(name);
  }
}

}  // namespace
}  // namespace graphshard::server
