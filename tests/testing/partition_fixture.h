#ifndef GRAPHSHARD_TESTS_TESTING_PARTITION_FIXTURE_H_
#define GRAPHSHARD_TESTS_TESTING_PARTITION_FIXTURE_H_

// Test-only helpers: a scratch folder under /tmp, a tiny hand-made graph, and a partition
// folder built from it.

#include <string>

#include "absl/status/statusor.h"
#include "common/manifest.h"
#include "partitioner/graph.h"

namespace graphshard::testing {

// A fresh folder made with mkdtemp under $TMPDIR (or /tmp), removed with its contents on
// destruction. path() is empty if mkdtemp failed.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// 10 nodes, 3 features (row v = {v, v + 0.5, -v}), 3 classes (label v % 3, node 9 unlabelled),
// a ring 0 -> 1 -> ... -> 9 -> 0 plus 0 -> 5 and 3 -> 7; splits train {0..5}, val {6, 7},
// test {8, 9}. Homogeneous: node type "node", edge type "node__to__node".
partitioner::Graph TinyGraph();

// Partitions TinyGraph() into `parts` (random, seed 1) at `out`.
absl::StatusOr<common::Manifest> WriteTinyPartition(const std::string& out, int parts = 2);

// The gzip'ed contents of a file as a string (NotFound if missing); and writing one.
absl::StatusOr<std::string> ReadGz(const std::string& path);
absl::Status WriteGz(const std::string& path, const std::string& contents);

// Copies a folder tree (for corrupting a copy of tests/data/cora).
absl::Status CopyTree(const std::string& from, const std::string& to);

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_TESTING_PARTITION_FIXTURE_H_
