#ifndef GRAPHSHARD_TESTS_FUZZ_FUZZ_UTIL_H_
#define GRAPHSHARD_TESTS_FUZZ_FUZZ_UTIL_H_

// Helpers of the libFuzzer targets (tests/fuzz/README.md): an input that stands for several
// files holds their contents separated by kSectionMarker (a string no real file holds by
// accident; the run scripts give it to libFuzzer as a dictionary entry), and the harness writes
// them into a fresh scratch folder per run.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace graphshard::fuzz {

inline constexpr absl::string_view kSectionMarker = "|GSFILE|";

// The sections of `data` between markers (at least `min_sections`, missing ones empty).
std::vector<std::string> SplitSections(const uint8_t* data, size_t size, size_t min_sections);

// Writes `contents` to `path`, creating the folders above it; aborts on an I/O error (the
// harness's own failure, not a finding).
void WriteFileOrDie(const std::string& path, absl::string_view contents);

// The same for a path the input chose: false (nothing to fuzz) where it cannot be a file, e.g.
// "a/b" after "a" was written as a file, or a name that is an existing folder.
bool WriteInputFile(const std::string& path, absl::string_view contents);

// A status the code under test may return: anything but OK must name what went wrong, so an
// empty message is a finding (the contract of docs/STYLE.md: errors say what and where).
void CheckErrorNamesSomething(const absl::Status& status, absl::string_view what);

// Aborts with `message` (a broken invariant: libFuzzer saves the input as a crash).
[[noreturn]] void Fail(absl::string_view message);

}  // namespace graphshard::fuzz

#endif  // GRAPHSHARD_TESTS_FUZZ_FUZZ_UTIL_H_
