// libFuzzer target: the TU reader (partitioner/tu_dataset.h) and what `partition` does next
// with its result (GraphFromTu, ValidateGraph). Sections (fuzz_util.h), in order:
// DS_A.txt, DS_graph_indicator.txt, DS_graph_labels.txt, DS_node_labels.txt,
// DS_node_attributes.txt; an empty optional section means no such file. Inputs whose node
// count (indicator lines) exceeds 4096 are skipped: their cost is size, not parsing.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "partitioner/graph.h"
#include "partitioner/tu_dataset.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/testing/partition_fixture.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fuzz = graphshard::fuzz;
  namespace partitioner = graphshard::partitioner;
  std::vector<std::string> s = fuzz::SplitSections(data, size, 5);
  if (std::count(s[1].begin(), s[1].end(), '\n') > 4096) return 0;
  graphshard::testing::ScratchDir dir;
  if (dir.path().empty()) fuzz::Fail("mkdtemp failed");
  fuzz::WriteFileOrDie(dir.Sub("FZ_A.txt"), s[0]);
  fuzz::WriteFileOrDie(dir.Sub("FZ_graph_indicator.txt"), s[1]);
  fuzz::WriteFileOrDie(dir.Sub("FZ_graph_labels.txt"), s[2]);
  if (!s[3].empty()) fuzz::WriteFileOrDie(dir.Sub("FZ_node_labels.txt"), s[3]);
  if (!s[4].empty()) fuzz::WriteFileOrDie(dir.Sub("FZ_node_attributes.txt"), s[4]);
  auto d = partitioner::ReadTuDataset(dir.path());
  fuzz::CheckErrorNamesSomething(d.status(), "ReadTuDataset");
  if (!d.ok()) return 0;
  if (static_cast<int64_t>(d->graph_of_node.size()) != d->num_nodes) {
    fuzz::Fail("graph_of_node does not have one entry per node");
  }
  auto g = partitioner::GraphFromTu(*d, 1);
  fuzz::CheckErrorNamesSomething(g.status(), "GraphFromTu");
  if (!g.ok()) return 0;
  fuzz::CheckErrorNamesSomething(partitioner::ValidateGraph(*g), "ValidateGraph");
  return 0;
}
