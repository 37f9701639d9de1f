// libFuzzer target: loading a partition folder (common::PartitionPart::Load), the manifest and
// every .npy file together, with checksums off (else almost every mutation stops at the first
// CRC: the contents behind it are what this fuzzes). The input is section 0, the manifest, then
// sections "<relative path>\n<file bytes>" (fuzz_util.h), written into a scratch folder; every
// part the manifest names (at most 4) is loaded. Invariant: a part that loads has node shards
// whose spans match its id range, and CSC rows inside the indices.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/partition_part.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::fuzz {
namespace {

bool SafeRelativePath(absl::string_view rel) {
  return !rel.empty() && rel.size() < 200 && rel[0] != '/' &&
         rel.find("..") == absl::string_view::npos && rel.find('\0') == absl::string_view::npos;
}

void CheckPart(const common::PartitionPart& part) {
  for (const common::NodeTypeInfo& info : part.manifest().node_types) {
    const common::NodeShard* shard = part.FindNodes(info.name);
    if (shard == nullptr) continue;
    const int64_t rows = shard->num_rows();
    if (rows < 0) Fail("negative row count");
    if (static_cast<int64_t>(shard->features.size()) != rows * shard->feat_dim) {
      Fail("feature span does not match rows * feat_dim");
    }
    if (!shard->labels.empty() && static_cast<int64_t>(shard->labels.size()) != rows) {
      Fail("label span does not match rows");
    }
  }
  for (const common::EdgeTypeInfo& info : part.manifest().edge_types) {
    const common::EdgeShard* edges = part.FindEdges(info.Name());
    if (edges == nullptr) continue;
    int64_t total = 0;
    for (int64_t v = 0; v < edges->csc.num_dst_nodes(); ++v) {
      total += static_cast<int64_t>(edges->csc.InNeighbors(v).size());
    }
    if (static_cast<int64_t>(edges->edge_ids.size()) != total) {
      Fail("edge_ids does not match the CSC's edge count");
    }
  }
}

}  // namespace
}  // namespace graphshard::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace graphshard;  // NOLINT: a libFuzzer entry point, outside our namespaces
  std::vector<std::string> sections = fuzz::SplitSections(data, size, 1);
  testing::ScratchDir dir;
  if (dir.path().empty()) fuzz::Fail("mkdtemp failed");
  fuzz::WriteFileOrDie(dir.Sub(common::kManifestFileName), sections[0]);
  for (size_t i = 1; i < sections.size(); ++i) {
    const size_t newline = sections[i].find('\n');
    if (newline == std::string::npos) continue;
    const absl::string_view rel = absl::string_view(sections[i]).substr(0, newline);
    if (!fuzz::SafeRelativePath(rel)) continue;
    // A path that cannot be a file here (a folder, or below a file) is left out.
    fuzz::WriteInputFile(dir.Sub(std::string(rel)),
                         absl::string_view(sections[i]).substr(newline + 1));
  }
  common::LoadOptions options;
  options.verify_checksums = false;
  auto manifest = common::ReadManifest(dir.path());
  fuzz::CheckErrorNamesSomething(manifest.status(), "ReadManifest");
  const int parts = manifest.ok() ? std::min(manifest->num_parts, 4) : 1;
  for (int p = 0; p < parts; ++p) {
    auto part = common::PartitionPart::Load(dir.path(), p, options);
    fuzz::CheckErrorNamesSomething(part.status(), "PartitionPart::Load");
    if (part.ok()) fuzz::CheckPart(**part);
  }
  return 0;
}
