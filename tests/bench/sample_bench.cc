// Sampling CPU per batch, in-process, one thread: the engine alone (BuildMinibatch over
// InProcessPeers, no RPC, no feature rows), as a server's builder thread spends it.
//   sample_bench --partition DIR [--batches N] [--warmup-batches W] [--batch-size B]
//                [--fanouts 15,10,5]
// JSON lines on stdout (tests/bench/RESULTS.md, "Sampling CPU per batch at papers scale"):
//   sample_cpu_ms_per_batch   thread CPU (user + system) per batch, mean over N batches after W
//                             untimed ones; also its p50 and p90, the page faults per batch,
//                             the distinct nodes and sampled edges per batch;
//   batches_digest            a hash of every id, edge and count of the N batches: equal across
//                             builds means the same batches (what a sampling change must keep).
// Batch b: seeds [b * B, (b + 1) * B) of part 0's training split shuffled with a fixed seed
// (wrapping), request seed b, without_features, not disjoint.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/partition_part.h"
#include "common/rng.h"
#include "common/thread_usage.h"
#include "server/engine/in_process_peers.h"
#include "server/engine/minibatch_builder.h"
#include "tests/bench/bench_util.h"

namespace graphshard::bench {
namespace {

struct Flags {
  std::string partition;
  int batches = 300;
  int warmup = 20;
  int batch_size = 1024;
  std::vector<int32_t> fanouts = {15, 10, 5};
};

// FNV-1a over 64-bit words: order-sensitive, so a reordering of ids or edges changes it.
class Digest {
 public:
  void Add(int64_t v) {
    h_ = (h_ ^ static_cast<uint64_t>(v)) * 0x100000001b3ULL;
  }
  void Add(const std::vector<int64_t>& vs) {
    Add(static_cast<int64_t>(vs.size()));
    for (int64_t v : vs) Add(v);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

void AddBatch(const engine::Minibatch& b, Digest& d) {
  for (const engine::NodeBlock& n : b.nodes) {
    d.Add(n.ids);
    d.Add(n.tree);
    d.Add(n.num_sampled_nodes);
  }
  for (const engine::EdgeBlock& e : b.edges) {
    d.Add(e.src);
    d.Add(e.dst);
    d.Add(e.num_sampled_edges);
  }
}

std::vector<int64_t> ShuffledTrainSeeds(const engine::LocalPart& local) {
  auto s = local.node_types()[local.target_type()].shard->splits.at("train");
  std::vector<int64_t> seeds(s.begin(), s.end());
  common::SplitMix64 rng(12345);
  for (size_t i = seeds.size(); i > 1; --i) std::swap(seeds[i - 1], seeds[rng.Below(i)]);
  return seeds;
}

engine::MinibatchRequest RequestOf(const Flags& f, const std::vector<int64_t>& seeds, int b) {
  engine::MinibatchRequest r;
  const size_t begin = (static_cast<size_t>(b) * static_cast<size_t>(f.batch_size)) % seeds.size();
  for (size_t i = 0; i < static_cast<size_t>(f.batch_size); ++i) {
    r.seeds.push_back(seeds[(begin + i) % seeds.size()]);
  }
  r.sampling.fanouts = f.fanouts;
  r.sampling.without_features = true;
  r.seed = static_cast<uint64_t>(b);
  return r;
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

int Run(const Flags& f) {
  auto manifest = common::ReadManifest(f.partition);
  if (!manifest.ok()) {
    std::fprintf(stderr, "%s\n", std::string(manifest.status().message()).c_str());
    return 1;
  }
  std::vector<std::unique_ptr<engine::LocalPart>> locals;
  std::vector<const engine::LocalPart*> views;
  for (int p = 0; p < manifest->num_parts; ++p) {
    auto part = common::PartitionPart::Load(f.partition, p, {.verify_checksums = false});
    if (!part.ok()) {
      std::fprintf(stderr, "%s\n", std::string(part.status().message()).c_str());
      return 1;
    }
    locals.push_back(*engine::LocalPart::Create(*std::move(part), engine::Limits{}));
    views.push_back(locals.back().get());
  }
  engine::InProcessPeers peers(views);
  const std::vector<int64_t> seeds = ShuffledTrainSeeds(*locals[0]);
  const engine::NodeType& target = locals[0]->node_types()[locals[0]->target_type()];
  std::fprintf(stderr, "sample_bench: %d parts, %lld '%s' nodes, %zu train seeds in part 0\n",
               manifest->num_parts, static_cast<long long>(target.book->num_nodes()),
               target.name.c_str(), seeds.size());
  PrintResult("num_nodes", static_cast<double>(target.book->num_nodes()), "nodes");

  Digest digest;
  std::vector<double> cpu_ms;
  double nodes = 0, edges = 0, faults = 0;
  for (int b = 0; b < f.warmup + f.batches; ++b) {
    const engine::MinibatchRequest r = RequestOf(f, seeds, b);
    common::ThreadUsageClock clock;
    auto batch = engine::BuildMinibatch(*locals[0], peers, r);
    common::ThreadUsage used;
    clock.Lap(&used);
    if (!batch.ok()) {
      std::fprintf(stderr, "batch %d: %s\n", b, std::string(batch.status().message()).c_str());
      return 1;
    }
    if (b < f.warmup) continue;
    cpu_ms.push_back(1e3 * (used.user_s + used.sys_s));
    faults += static_cast<double>(used.minor_faults);
    for (const engine::NodeBlock& n : batch->nodes) nodes += static_cast<double>(n.ids.size());
    edges += static_cast<double>(batch->NumSampledEdges());
    AddBatch(*batch, digest);
  }
  double sum = 0;
  for (double ms : cpu_ms) sum += ms;
  const double n = static_cast<double>(cpu_ms.size());
  PrintResult("sample_cpu_ms_per_batch", sum / n, "ms");
  PrintResult("sample_cpu_ms_per_batch_p50", Percentile(cpu_ms, 0.5), "ms");
  PrintResult("sample_cpu_ms_per_batch_p90", Percentile(cpu_ms, 0.9), "ms");
  PrintResult("minor_faults_per_batch", faults / n, "faults");
  PrintResult("nodes_per_batch", nodes / n, "nodes");
  PrintResult("edges_per_batch", edges / n, "edges");
  std::printf("{\"name\": \"batches_digest\", \"value\": \"%016llx\", \"batches\": %d}\n",
              static_cast<unsigned long long>(digest.value()), f.batches);
  return 0;
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--partition") {
      f->partition = v;
    } else if (k == "--batches" && absl::SimpleAtoi(v, &f->batches)) {
    } else if (k == "--warmup-batches" && absl::SimpleAtoi(v, &f->warmup)) {
    } else if (k == "--batch-size" && absl::SimpleAtoi(v, &f->batch_size)) {
    } else if (k == "--fanouts") {
      f->fanouts.clear();
      for (absl::string_view s : absl::StrSplit(v, ',')) {
        int32_t x = 0;
        if (!absl::SimpleAtoi(s, &x)) return false;
        f->fanouts.push_back(x);
      }
    } else {
      std::fprintf(stderr, "sample_bench: bad flag %s %s\n", k.c_str(), v.c_str());
      return false;
    }
  }
  return !f->partition.empty() && f->batches > 0 && f->warmup >= 0 && f->batch_size > 0 &&
         !f->fanouts.empty();
}

}  // namespace
}  // namespace graphshard::bench

int main(int argc, char** argv) {
  graphshard::bench::Flags f;
  if (!graphshard::bench::ParseFlags(argc, argv, &f)) {
    std::fprintf(stderr,
                 "usage: sample_bench --partition DIR [--batches N] [--warmup-batches W] "
                 "[--batch-size B] [--fanouts 15,10,5]\n");
    return 2;
  }
  return graphshard::bench::Run(f);
}
