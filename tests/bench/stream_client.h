#ifndef GRAPHSHARD_TESTS_BENCH_STREAM_CLIENT_H_
#define GRAPHSHARD_TESTS_BENCH_STREAM_CLIENT_H_

// server_bench's client side: a streaming client as a trainer reads (shared memory, ring kept
// across streams), the servers' Stats, and CPU/wall clocks. Shared by its sections
// (server_bench.cc, cross_host.cc).

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "proto/graphshard.pb.h"
#include "rpc/security.h"
#include "shm/ring.h"

namespace graphshard::bench {

// CPUs this process may run on (taskset / cgroup affinity), else the hardware's.
int UsableCores();
// CPU seconds of the whole process (all threads), and of the calling thread; wall seconds.
double ProcessCpuSeconds();
double ThreadCpuSeconds();
double Now();

// What a client streams.
struct StreamParams {
  int batches = 20;
  int batch_size = 1024;
  std::vector<int32_t> fanouts = {15, 10, 5};
  v1::FeatureDtype dtype = v1::FLOAT32;
  bool ring = true;  // read reused ring segments (else one-shot segments)
  // Ids and labels only, no feature rows (the trainer's --feature-store device).
  bool without_features = false;
};

struct Totals {
  int64_t batches = 0, seeds = 0, edges = 0, feature_bytes = 0;
  double client_cpu_s = 0;  // CPU time of the client threads themselves
  int64_t errors = 0;       // streams that ended with an error (printed on stderr)
  void Add(const Totals& o) {
    errors += o.errors;
    batches += o.batches;
    seeds += o.seeds;
    edges += o.edges;
    feature_bytes += o.feature_bytes;
    client_cpu_s += o.client_cpu_s;
  }
};

// A client's ring reader kept across its streams, with its id and the secret the server names
// its segments for (as the trainer's, per server).
// The id is random (from the key): a server binds ids to keys for an hour, so a fixed id would be
// refused to the next bench process (another key) against the same servers.
struct ClientRing {
  ClientRing() {
    std::memcpy(&id, key.data(), sizeof(id));
    id |= 1;  // 0 means no ring id
  }
  shm::ShmRingReader reader;
  std::string key = rpc::NewNonce();
  uint64_t id = 0;
};

// One client stream of `num_batches` (0: p.batches) batches from `address` over `seeds`;
// decodes each (maps shm when `shm`) and touches its features. Errors go to stderr.
// `on_batch` (optional) gets each batch's latency: seconds the client waited for it (the read;
// the first one includes opening the stream).
Totals StreamOnce(const StreamParams& p, const std::string& address,
                  const std::vector<int64_t>& seeds, bool shm, uint64_t shuffle_seed,
                  int num_batches = 0, ClientRing* client = nullptr,
                  const std::function<void(double)>& on_batch = nullptr);

// A server's Stats (10 s deadline); nullopt if it does not answer.
std::optional<v1::Stats> StatsAt(const std::string& address);

// The seeds client c of n streams when client c reads server c mod k: that part's training
// seeds split evenly among the clients it serves.
std::vector<int64_t> ClientShard(const std::vector<std::vector<int64_t>>& train, int n, int c);

}  // namespace graphshard::bench

#endif  // GRAPHSHARD_TESTS_BENCH_STREAM_CLIENT_H_
