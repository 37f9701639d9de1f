// libFuzzer target: the two parsers in front of every partition-folder load, in memory.
// First byte even: the bytes after it are an .npy file (common::ParseNpyHeader); odd: a
// manifest (common::ParseManifest). Invariants: a header that parses describes data that lies
// inside the file, and re-encodes to a header that parses to the same dtype and shape; a
// manifest that parses survives ManifestToJson -> ParseManifest unchanged.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "common/manifest.h"
#include "common/npy.h"
#include "tests/fuzz/fuzz_util.h"

namespace graphshard::fuzz {
namespace {

void FuzzNpy(absl::Span<const char> file) {
  auto header = common::ParseNpyHeader(file, "fuzz.npy");
  CheckErrorNamesSomething(header.status(), "ParseNpyHeader");
  if (!header.ok()) return;
  if (header->data_offset > file.size()) Fail("data_offset beyond the file");
  for (int64_t d : header->shape) {
    if (d < 0) Fail("negative dimension accepted");
  }
  const std::string again = common::EncodeNpyHeader(header->dtype, header->shape);
  auto reparsed = common::ParseNpyHeader(again, "again.npy");
  if (!reparsed.ok()) Fail("EncodeNpyHeader output does not parse: " + again);
  if (reparsed->shape != header->shape || reparsed->dtype != header->dtype) {
    Fail("npy header round trip changed dtype or shape");
  }
}

void FuzzManifest(absl::string_view json) {
  auto manifest = common::ParseManifest(json, "fuzz/graphshard.json");
  CheckErrorNamesSomething(manifest.status(), "ParseManifest");
  if (!manifest.ok()) return;
  const std::string text = common::ManifestToJson(*manifest);
  auto again = common::ParseManifest(text, "again/graphshard.json");
  if (!again.ok()) Fail("ManifestToJson output does not parse: " + again.status().ToString());
  if (common::ManifestToJson(*again) != text) Fail("manifest round trip changed it");
}

}  // namespace
}  // namespace graphshard::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* rest = reinterpret_cast<const char*>(data + 1);
  if (data[0] % 2 == 0) {
    graphshard::fuzz::FuzzNpy(absl::Span<const char>(rest, size - 1));
  } else {
    graphshard::fuzz::FuzzManifest(absl::string_view(rest, size - 1));
  }
  return 0;
}
