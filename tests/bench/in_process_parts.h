#ifndef GRAPHSHARD_TESTS_BENCH_IN_PROCESS_PARTS_H_
#define GRAPHSHARD_TESTS_BENCH_IN_PROCESS_PARTS_H_

// Every part of a partition folder loaded in this process, answering each other's hops: what
// the in-process benchmarks (sample_bench, hotness_bench) build batches over, as the servers
// would, without RPC. Checksums are not verified (the benchmarks only read).

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/in_process_peers.h"
#include "server/engine/local_part.h"

namespace graphshard::bench {

struct InProcessParts {
  std::vector<std::unique_ptr<engine::LocalPart>> locals;  // [part]
  std::unique_ptr<engine::InProcessPeers> peers;           // over `locals`
};

// The error of the first part (or the manifest) that does not load.
absl::StatusOr<InProcessParts> LoadInProcessParts(const std::string& dir);

}  // namespace graphshard::bench

#endif  // GRAPHSHARD_TESTS_BENCH_IN_PROCESS_PARTS_H_
