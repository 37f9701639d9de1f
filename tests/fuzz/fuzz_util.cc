#include "tests/fuzz/fuzz_util.h"

#include <filesystem>
#include <fstream>

namespace graphshard::fuzz {

std::vector<std::string> SplitSections(const uint8_t* data, size_t size, size_t min_sections) {
  const absl::string_view all(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = all.find(kSectionMarker, start);
    if (at == absl::string_view::npos) {
      out.emplace_back(all.substr(start));
      break;
    }
    out.emplace_back(all.substr(start, at - start));
    start = at + kSectionMarker.size();
  }
  if (out.size() < min_sections) out.resize(min_sections);
  return out;
}

bool WriteInputFile(const std::string& path, absl::string_view contents) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  f.close();
  return static_cast<bool>(f);
}

void WriteFileOrDie(const std::string& path, absl::string_view contents) {
  if (!WriteInputFile(path, contents)) {
    std::fprintf(stderr, "fuzz harness: cannot write %s\n", path.c_str());
    std::abort();
  }
}

void CheckErrorNamesSomething(const absl::Status& status, absl::string_view what) {
  if (!status.ok() && status.message().empty()) {
    Fail(std::string(what) + ": error status with an empty message");
  }
}

void Fail(absl::string_view message) {
  std::fprintf(stderr, "fuzz invariant broken: %.*s\n", static_cast<int>(message.size()),
               message.data());
  std::abort();
}

}  // namespace graphshard::fuzz
