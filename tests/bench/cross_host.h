#ifndef GRAPHSHARD_TESTS_BENCH_CROSS_HOST_H_
#define GRAPHSHARD_TESTS_BENCH_CROSS_HOST_H_

// server_bench's cross-host section (peers across hosts): the same clients against servers whose
// peers are reached as on one host and as across hosts (--isolated-peers), with and without the
// cache of hot remote rows and the float16 peer dtype, in one run; JSON lines on stdout.

#include <string>
#include <vector>

#include "tests/bench/stream_client.h"

namespace graphshard::bench {

struct CrossHostFlags {
  std::string partition;
  StreamParams stream;
  std::vector<v1::FeatureDtype> dtypes = {v1::FLOAT32};
  std::vector<int> clients = {1, 2, 4};
  std::vector<std::string> modes;  // names from CrossHostModes()
  int threads = 0;
  int prefetch = 4;
  int warmup = 0;  // batches each client streams untimed first (its ring kept)
  int cache_mib = 256;
  // Attached (the two-namespace run): servers started elsewhere at these addresses (index =
  // part); this process runs only the clients of `client_parts` and reads only their servers'
  // Stats (and CPU from `server_pids` through /proc), names its results `attach_name`, and
  // reports the bytes through `net_dev` against `link_gbit`. With `barrier_dir`, each timed run
  // starts once `barrier_count` processes reached it (files in that folder; 120 s at most).
  std::vector<std::string> attach;
  std::vector<int> client_parts;
  std::vector<int> server_pids;
  std::string attach_name = "attached";
  std::string net_dev;
  double link_gbit = 25;
  std::string barrier_dir;
  int barrier_count = 0;
};

// The mode names --cross-host accepts, comma-separated in the usage line.
std::string CrossHostModes();
// 0, or 1 after printing what failed.
int RunCrossHost(const CrossHostFlags& f);

}  // namespace graphshard::bench

#endif  // GRAPHSHARD_TESTS_BENCH_CROSS_HOST_H_
