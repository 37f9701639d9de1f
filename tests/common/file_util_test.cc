#include "common/file_util.h"

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/testing/file_size_limit.h"
#include "tests/testing/scratch_dir.h"

namespace graphshard::common {
namespace {

std::string Contents(const std::string& path) {
  absl::StatusOr<std::string> s = ReadFileToString(path);
  return s.ok() ? *s : "<" + std::string(s.status().message()) + ">";
}

using ::graphshard::testing::FileSizeLimit;

TEST(AppendFile, AppendsWholeRecordsAndKeepsWhatWasThere) {
  const graphshard::testing::ScratchDir scratch("file_util_test");
  const std::string path = scratch / "append_records.jsonl";
  {
    auto f = AppendFile::Open(path, /*truncate=*/false);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Append("one\n").ok());
    ASSERT_TRUE((*f)->Append("two\n").ok());
    EXPECT_EQ(Contents(path), "one\ntwo\n");  // written through, no buffer to flush
  }
  {
    auto f = AppendFile::Open(path, /*truncate=*/false);  // a resumed run continues the file
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Append("three\n").ok());
  }
  EXPECT_EQ(Contents(path), "one\ntwo\nthree\n");
  auto f = AppendFile::Open(path, /*truncate=*/true);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(Contents(path), "");
}

TEST(AppendFile, AFullDiskCutsThePartialRecordOffAndNamesTheFile) {
  const graphshard::testing::ScratchDir scratch("file_util_test");
  const std::string path = scratch / "append_full.jsonl";
  auto f = AppendFile::Open(path, /*truncate=*/false);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE((*f)->Append("first record\n").ok());
  {
    FileSizeLimit limit(20);  // room for 7 more bytes
    ASSERT_TRUE(limit.ok());
    absl::Status s = (*f)->Append("second record, too long to fit\n");
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
    EXPECT_TRUE(absl::StrContains(s.message(), path)) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "write failed: File too large")) << s;
    EXPECT_EQ(Contents(path), "first record\n");  // no half record
    EXPECT_TRUE((*f)->Append("short\n").ok());    // what still fits is written
  }
  EXPECT_EQ(Contents(path), "first record\nshort\n");
  ASSERT_TRUE((*f)->Append("after\n").ok());  // room again
  EXPECT_EQ(Contents(path), "first record\nshort\nafter\n");
}

TEST(AppendFile, NoSpaceLeftIsAnErrorSayingSo) {
  auto f = AppendFile::Open("/dev/full", /*truncate=*/false);
  ASSERT_TRUE(f.ok()) << f.status();
  absl::Status s = (*f)->Append("x\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(s.message(), "/dev/full: write failed: No space left on device"))
      << s;
}

TEST(AppendFile, AFileThatCannotBeOpenedIsAnErrorNamingIt) {
  auto f = AppendFile::Open("/nonexistent/dir/metrics.jsonl", false);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(f.status().message(),
                                "/nonexistent/dir/metrics.jsonl: cannot open: No such file"))
      << f.status();
}

TEST(WriteFileAtomically, AFullDiskKeepsTheOldFileAndLeavesNoTemporary) {
  const graphshard::testing::ScratchDir scratch("file_util_test");
  const std::string& dir = scratch.path();
  const std::string path = dir + "/checkpoint.pt";
  ASSERT_TRUE(WriteFileAtomically(path, "old contents").ok());
  {
    FileSizeLimit limit(16);
    ASSERT_TRUE(limit.ok());
    absl::Status s = WriteFileAtomically(path, std::string(64, 'n'));
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
    EXPECT_TRUE(absl::StrContains(s.message(), "checkpoint.pt.tmp.")) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "write failed: File too large")) << s;
  }
  EXPECT_EQ(Contents(path), "old contents");
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1);  // the temporary is gone
  ASSERT_TRUE(WriteFileAtomically(path, "new contents").ok());
  EXPECT_EQ(Contents(path), "new contents");
}

}  // namespace
}  // namespace graphshard::common
