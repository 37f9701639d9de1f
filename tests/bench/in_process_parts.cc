#include "tests/bench/in_process_parts.h"

#include <utility>

#include "common/manifest.h"
#include "common/partition_part.h"

namespace graphshard::bench {

absl::StatusOr<InProcessParts> LoadInProcessParts(const std::string& dir) {
  absl::StatusOr<common::Manifest> manifest = common::ReadManifest(dir);
  if (!manifest.ok()) return manifest.status();
  InProcessParts g;
  std::vector<const engine::LocalPart*> views;
  for (int p = 0; p < manifest->num_parts; ++p) {
    auto part = common::PartitionPart::Load(dir, p, {.verify_checksums = false});
    if (!part.ok()) return part.status();
    auto local = engine::LocalPart::Create(*std::move(part), engine::Limits{});
    if (!local.ok()) return local.status();
    g.locals.push_back(*std::move(local));
    views.push_back(g.locals.back().get());
  }
  g.peers = std::make_unique<engine::InProcessPeers>(std::move(views));
  return g;
}

}  // namespace graphshard::bench
