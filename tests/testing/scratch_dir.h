#ifndef GRAPHSHARD_TESTS_TESTING_SCRATCH_DIR_H_
#define GRAPHSHARD_TESTS_TESTING_SCRATCH_DIR_H_

// A test's own scratch folder: made fresh under the test temp folder (gtest's TempDir(), /tmp
// by default) with a unique name, removed with everything in it when the object goes. Two runs of
// a suite at once (two build trees, a CI clone beside a developer's build) then never share a
// folder, and a run leaves nothing behind. Header-only; thread-compatible.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace graphshard::testing {

class ScratchDir {
 public:
  // `prefix` starts the folder's name (e.g. the test's name), for whoever finds one left by a
  // crashed test.
  explicit ScratchDir(const std::string& prefix) {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / (prefix + "_XXXXXX")).string();
    // Without its folder a test must not go on (it would write beside the folder it meant):
    // gtest reports the exception as the test's failure and runs nothing more of it.
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot make a scratch folder " + pattern + ": " +
                               std::strerror(errno));
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // `name` inside the folder.
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_TESTING_SCRATCH_DIR_H_
