// Sampling CPU per batch, in-process, one thread: the engine alone (BuildMinibatch over
// InProcessPeers, no RPC, no feature rows), as a server's builder thread spends it.
//   sample_bench --partition DIR [--batches N] [--warmup-batches W] [--batch-size B]
//                [--fanouts 15,10,5] [--replay-batches R]
// JSON lines on stdout (tests/bench/RESULTS.md, "Sampling CPU per batch at papers scale"):
//   sample_cpu_ms_per_batch   thread CPU (user + system) per batch, mean over N batches after W
//                             untimed ones; also its p50 and p90, the page faults per batch,
//                             the distinct nodes and sampled edges per batch;
//   batches_digest            a hash of every id, edge and count of the N batches: equal across
//                             builds means the same batches (what a sampling change must keep);
//   relabel_*_ms_per_batch    (one node and edge type only) the relabelling alone, replayed
//                             from the first R batches (--replay-batches): every Add the builder
//                             made, in its order, with the merge's prefetch, through each table
//                             of node_index.h: the hash table (what a type above
//                             RelabelTablePool::kMaxDenseNodes gets), the dense table, and the
//                             (tree, id) hash map grown from empty per batch (disjoint mode's,
//                             and every large type's before the hash table): the baseline of the
//                             ratios. Each replay must give the batch's own local indices.
// Batch b: seeds [b * B, (b + 1) * B) of part 0's training split shuffled with a fixed seed
// (wrapping), request seed b, without_features, not disjoint. Runs with the server's allocator
// settings (server/malloc_tuning.h: re-executes itself once, as graphshard-server does).

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "common/partition_part.h"
#include "common/rng.h"
#include "common/thread_usage.h"
#include "server/engine/in_process_peers.h"
#include "server/engine/internal/node_index.h"
#include "server/engine/minibatch_builder.h"
#include "server/malloc_tuning.h"
#include "tests/bench/bench_util.h"
#include "tests/bench/in_process_parts.h"

namespace graphshard::bench {
namespace {

struct Flags {
  std::string partition;
  int batches = 300;
  int warmup = 20;
  int batch_size = 1024;
  std::vector<int32_t> fanouts = {15, 10, 5};
  int replay = 50;
};

// FNV-1a over 64-bit words: order-sensitive, so a reordering of ids or edges changes it.
class Digest {
 public:
  void Add(int64_t v) { h_ = (h_ ^ static_cast<uint64_t>(v)) * 0x100000001b3ULL; }
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

// One batch's relabelling as the builder did it (one node and edge type): the ids of its
// Add calls in order (seeds, then every sampled edge's source) and the local index each got.
struct AddSequence {
  std::vector<int64_t> ids;
  std::vector<int64_t> local;
};

AddSequence SequenceOf(const engine::Minibatch& b) {
  AddSequence seq;
  const std::vector<int64_t>& ids = b.nodes[0].ids;
  const auto seeds = static_cast<size_t>(b.batch_size);
  for (size_t i = 0; i < seeds; ++i) {
    seq.ids.push_back(ids[i]);
    seq.local.push_back(static_cast<int64_t>(i));
  }
  for (int64_t s : b.edges[0].src) {
    seq.ids.push_back(ids[static_cast<size_t>(s)]);
    seq.local.push_back(s);
  }
  return seq;
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Relabelling (not the batches' other work) as sample_hop.cc's merge does it, prefetching
// kAhead ids ahead (0: none); false unless every Add gives the index the builder gave.
constexpr size_t kAhead = 16;
using MakeIndex = std::function<engine::internal::NodeIndex()>;

bool ReplayOne(const AddSequence& seq, const MakeIndex& make, size_t ahead, int64_t* table_ids) {
  engine::internal::NodeIndex index = make();
  std::vector<int64_t> local;
  local.reserve(seq.ids.size());
  const size_t n = seq.ids.size();
  for (size_t i = 0; i < n; ++i) {
    if (ahead > 0 && i + ahead < n) index.Prefetch(seq.ids[i + ahead]);
    local.push_back(index.Add(0, seq.ids[i]));
  }
  *table_ids = std::ssize(index.ids);
  return local == seq.local;
}

// CPU ms per batch of relabelling `seqs` through `make`'s index; -1 if an index differs.
double ReplayMs(const std::vector<AddSequence>& seqs, const MakeIndex& make, size_t ahead) {
  int64_t nodes = 0;
  for (int round = 0; round < 2; ++round) {  // round 0 warms the pool's tables
    const double t0 = ThreadCpuSeconds();
    for (const AddSequence& seq : seqs) {
      if (!ReplayOne(seq, make, ahead, &nodes)) return -1;
    }
    if (round == 1) return 1e3 * (ThreadCpuSeconds() - t0) / static_cast<double>(seqs.size());
  }
  return -1;
}

// The dense table at any size (NodeIndex::ById gives one only up to kMaxDenseNodes).
class DenseReplay {
 public:
  DenseReplay(engine::internal::RelabelTablePool& pool, int64_t num_nodes)
      : pool_(pool), num_nodes_(num_nodes) {}
  double Ms(const std::vector<AddSequence>& seqs) const {
    double ms = -1;
    for (int round = 0; round < 2; ++round) {
      const double t0 = ThreadCpuSeconds();
      for (const AddSequence& seq : seqs) {
        auto table = pool_.AcquireDense(num_nodes_);
        std::vector<int64_t> ids, local;
        local.reserve(seq.ids.size());
        const size_t n = seq.ids.size();
        for (size_t i = 0; i < n; ++i) {
          if (i + kAhead < n) table->Prefetch(seq.ids[i + kAhead]);
          int64_t at = table->Find(seq.ids[i]);
          if (at < 0) {
            at = std::ssize(ids);
            table->Set(seq.ids[i], at);
            ids.push_back(seq.ids[i]);
          }
          local.push_back(at);
        }
        pool_.Release(std::move(table));
        if (local != seq.local) return -1;
      }
      ms = 1e3 * (ThreadCpuSeconds() - t0) / static_cast<double>(seqs.size());
    }
    return ms;
  }

 private:
  engine::internal::RelabelTablePool& pool_;
  int64_t num_nodes_;
};

void ReportReplay(const std::vector<AddSequence>& seqs, int64_t num_nodes) {
  using engine::internal::NodeIndex;
  using engine::internal::RelabelTablePool;
  RelabelTablePool pool;
  int64_t max_nodes = 0;
  for (const AddSequence& seq : seqs) max_nodes = std::max(max_nodes, std::ssize(seq.ids));
  auto by_tree = [] { return NodeIndex::ByTree(); };
  const double map_ms = ReplayMs(seqs, by_tree, 0);
  // ById picks the hash table above kMaxDenseNodes whatever the true node count.
  const int64_t hashed_nodes = std::max(num_nodes, RelabelTablePool::kMaxDenseNodes + 1);
  auto hashed = [&] { return NodeIndex::ById(pool, hashed_nodes, max_nodes); };
  const double hash_ms = ReplayMs(seqs, hashed, kAhead);
  const double hash_nopf_ms = ReplayMs(seqs, hashed, 0);
  const double dense_ms = DenseReplay(pool, num_nodes).Ms(seqs);
  if (map_ms < 0 || hash_ms < 0 || hash_nopf_ms < 0 || dense_ms < 0) {
    std::fprintf(stderr, "sample_bench: a replayed relabelling differs from the batch's\n");
    return;
  }
  PrintResult("relabel_map_ms_per_batch", map_ms, "ms");
  PrintCompared("relabel_hash_ms_per_batch", hash_ms, "ms", "relabel_map_ms_per_batch", map_ms);
  PrintCompared("relabel_hash_noprefetch_ms_per_batch", hash_nopf_ms, "ms",
                "relabel_map_ms_per_batch", map_ms);
  PrintCompared("relabel_dense_ms_per_batch", dense_ms, "ms", "relabel_map_ms_per_batch", map_ms);
  auto table = pool.AcquireHash(max_nodes);
  PrintResult("relabel_hash_table_bytes", 16.0 * static_cast<double>(table->capacity()), "B");
  PrintResult("relabel_dense_table_bytes", 8.0 * static_cast<double>(num_nodes), "B");
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

int Run(const Flags& f) {
  absl::StatusOr<InProcessParts> parts = LoadInProcessParts(f.partition);
  if (!parts.ok()) {
    std::fprintf(stderr, "%s\n", std::string(parts.status().message()).c_str());
    return 1;
  }
  const std::vector<std::unique_ptr<engine::LocalPart>>& locals = parts->locals;
  engine::InProcessPeers& peers = *parts->peers;
  const std::vector<int64_t> seeds = ShuffledTrainSeeds(*locals[0]);
  const engine::NodeType& target = locals[0]->node_types()[locals[0]->target_type()];
  std::fprintf(stderr, "sample_bench: %zd parts, %lld '%s' nodes, %zu train seeds in part 0\n",
               std::ssize(locals), static_cast<long long>(target.book->num_nodes()),
               target.name.c_str(), seeds.size());
  PrintResult("num_nodes", static_cast<double>(target.book->num_nodes()), "nodes");

  Digest digest;
  const bool homogeneous =
      locals[0]->node_types().size() == 1 && locals[0]->edge_types().size() == 1;
  std::vector<AddSequence> replay;
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
  std::fflush(stdout);
  // The replayed batches are built again after the timed ones: kept during them, their
  // sequences would take the heap the timed batches reuse (page faults in the timing).
  for (int b = f.warmup; homogeneous && b < f.warmup + std::min(f.replay, f.batches); ++b) {
    auto batch = engine::BuildMinibatch(*locals[0], peers, RequestOf(f, seeds, b));
    if (!batch.ok()) return 1;
    replay.push_back(SequenceOf(*batch));
  }
  if (!replay.empty()) ReportReplay(replay, target.book->num_nodes());
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
    } else if (k == "--replay-batches" && absl::SimpleAtoi(v, &f->replay)) {
    } else if (k == "--fanouts") {
      if (!ParseFanouts(v, &f->fanouts)) return false;
    } else {
      std::fprintf(stderr, "sample_bench: bad flag %s %s\n", k.c_str(), v.c_str());
      return false;
    }
  }
  return !f->partition.empty() && f->batches > 0 && f->warmup >= 0 && f->batch_size > 0 &&
         f->replay >= 0 && !f->fanouts.empty();
}

}  // namespace
}  // namespace graphshard::bench

int main(int argc, char** argv) {
  graphshard::bench::Flags f;
  if (!graphshard::bench::ParseFlags(argc, argv, &f)) {
    std::fprintf(stderr,
                 "usage: sample_bench --partition DIR [--batches N] [--warmup-batches W] "
                 "[--batch-size B] [--fanouts 15,10,5] [--replay-batches R]\n");
    return 2;
  }
  graphshard::server::ReexecWithMallocTunables(argv, 256);
  return graphshard::bench::Run(f);
}
