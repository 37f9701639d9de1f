// libFuzzer target: the reader of OGB's raw homogeneous layout (partitioner/read_input.h,
// ReadOgbHomogeneous) and ValidateGraph after it (what `partition` runs next). Sections
// (fuzz_util.h), in order, written as plain text (zlib reads plain files transparently, and
// compressed input would hide the text from the fuzzer): raw/num-node-list, raw/num-edge-list,
// raw/edge, raw/node-feat, raw/node-label, split/s/train, split/s/valid, split/s/test (each
// .csv.gz). Inputs declaring more than 65536 nodes are skipped: their cost is size.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "partitioner/graph.h"
#include "partitioner/read_input.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/testing/partition_fixture.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fuzz = graphshard::fuzz;
  namespace partitioner = graphshard::partitioner;
  std::vector<std::string> s = fuzz::SplitSections(data, size, 8);
  int64_t declared = 0;
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(s[0]), &declared) && declared > 65536) return 0;
  graphshard::testing::ScratchDir dir;
  if (dir.path().empty()) fuzz::Fail("mkdtemp failed");
  const char* const files[] = {"raw/num-node-list", "raw/num-edge-list", "raw/edge",
                               "raw/node-feat",     "raw/node-label",    "split/s/train",
                               "split/s/valid",     "split/s/test"};
  for (int i = 0; i < 8; ++i) {
    fuzz::WriteFileOrDie(dir.Sub(std::string(files[i]) + ".csv.gz"), s[i]);
  }
  auto g = partitioner::ReadOgbHomogeneous(dir.path());
  fuzz::CheckErrorNamesSomething(g.status(), "ReadOgbHomogeneous");
  if (!g.ok()) return 0;
  fuzz::CheckErrorNamesSomething(partitioner::ValidateGraph(*g), "ValidateGraph");
  return 0;
}
