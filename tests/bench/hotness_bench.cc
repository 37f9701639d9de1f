// Which ranking of rows fills the tiered feature store's device tier best (docs/DESIGN.md, "Why
// pre-sampling, not in-degree"): the share of gathered rows a device tier of a given fraction of
// each node type's rows answers, for each ranking, on batches the ranking has not seen.
//   hotness_bench --partition DIR [--batch-size 1024] [--fanouts 15,10,5]
//                 [--fractions 0.05,0.1,0.25] [--eval-epochs 2] [--threads T]
//                 [--reuse-windows 1,2,4|none]
// Batches are built in process (BuildMinibatch over InProcessPeers, no rows), as the servers
// build them: epoch e batches every part's training seeds, shuffled per (e, part), at the part
// that owns them, each batch with its own request seed. Epochs 1 and 2 are the pre-sampling
// passes, epochs 3 .. 2 + E the evaluation. A row is one node of a batch's node block (a batch
// gathers each of its distinct nodes once). Rankings, hottest first, ties by the lower id:
//   presample          visits in epoch 1 (what the trainer does: client/visit_counts.h)
//   presample_degree   the same, ties by out-degree, then id
//   presample2         visits in epochs 1 and 2 (two passes)
//   presample_plus_degree  visits in epoch 1 plus out-degree x (the type's visits / edges)
//   presample_plus_in_degree  the same with in-degree (what a server knows of its own nodes
//                      without a pass over the edges: its CSC's row lengths)
//   in_degree          in-edges (the rows a seed's own hop reads)
//   out_degree         edges that leave the node (how many nodes can sample it: PaGraph's)
//   oracle             visits in the evaluation epochs themselves (the bound no ranking passes)
// JSON lines on stdout: hit_rate_<pct>pct_<ranking> against the presample ranking's (baseline);
// presample_in_sample_hit_rate_<pct>pct (epoch 1's own ranking on epoch 1: what the first epoch
// of training sees); seconds_per_presample_epoch (wall, `threads` builders);
// reuse_<pct>pct_within_<k>: of the rows a device tier of that fraction (presample ranking) does
// not hold, the share that one of the k batches before it also gathers (epoch 3, the parts'
// batches taken in turn, as a trainer of two servers takes them): what a gather could copy
// from batches already on the GPU (--prefetch of them wait there) instead of over PCIe.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/partition_part.h"
#include "common/rng.h"
#include "server/engine/minibatch_builder.h"
#include "server/malloc_tuning.h"
#include "tests/bench/bench_util.h"
#include "tests/bench/in_process_parts.h"

namespace graphshard::bench {
namespace {

struct Flags {
  std::string partition;
  int batch_size = 1024;
  std::vector<int32_t> fanouts = {15, 10, 5};
  std::vector<double> fractions = {0.05, 0.1, 0.25};
  int eval_epochs = 2;
  int threads = 1;
  std::vector<int> reuse_windows = {1, 2, 4};
};

using Counts = std::vector<std::vector<uint32_t>>;  // [node type][id]

struct Graph : InProcessParts {
  std::vector<int64_t> num_nodes;  // per node type
};

Counts ZeroCounts(const Graph& g) {
  Counts c;
  for (const int64_t n : g.num_nodes) c.emplace_back(static_cast<size_t>(n), 0);
  return c;
}

void Accumulate(const Counts& from, Counts& into) {
  for (size_t t = 0; t < from.size(); ++t) {
    for (size_t i = 0; i < from[t].size(); ++i) into[t][i] += from[t][i];
  }
}

struct BatchJob {
  int part = 0;
  std::vector<int64_t> seeds;
  uint64_t request_seed = 0;
};

// Every batch of epoch `epoch`: each part's training seeds, shuffled per (epoch, part).
std::vector<BatchJob> EpochJobs(const Graph& g, int epoch, int batch_size) {
  std::vector<BatchJob> jobs;
  for (const auto& local : g.locals) {
    const auto& split = local->node_types()[local->target_type()].shard->splits.at("train");
    std::vector<int64_t> seeds(split.begin(), split.end());
    common::SplitMix64 rng(static_cast<uint64_t>(epoch) * 1000003ULL +
                           static_cast<uint64_t>(local->part_index()));
    for (size_t i = seeds.size(); i > 1; --i) std::swap(seeds[i - 1], seeds[rng.Below(i)]);
    for (size_t b = 0; b * static_cast<size_t>(batch_size) < seeds.size(); ++b) {
      const size_t begin = b * static_cast<size_t>(batch_size);
      const size_t end = std::min(seeds.size(), begin + static_cast<size_t>(batch_size));
      jobs.push_back({.part = local->part_index(),
                      .seeds = {seeds.begin() + static_cast<std::ptrdiff_t>(begin),
                                seeds.begin() + static_cast<std::ptrdiff_t>(end)},
                      .request_seed = (static_cast<uint64_t>(epoch) << 40) ^
                                      (static_cast<uint64_t>(local->part_index()) << 32) ^ b});
    }
  }
  return jobs;
}

// Builds every batch of epoch `epoch` on `threads` and hands each, with its job index, to
// `use(thread, job, batch)` (called from the builder threads). False when a batch fails.
template <typename Use>
bool ForEachBatch(const Graph& g, const Flags& f, const std::vector<BatchJob>& jobs, Use use) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&](int thread) {
    for (size_t j = next++; j < jobs.size() && !failed; j = next++) {
      engine::MinibatchRequest r;
      r.seeds = jobs[j].seeds;
      r.sampling.fanouts = f.fanouts;
      r.sampling.without_features = true;
      r.seed = jobs[j].request_seed;
      auto batch =
          engine::BuildMinibatch(*g.locals[static_cast<size_t>(jobs[j].part)], *g.peers, r);
      if (!batch.ok()) {
        std::fprintf(stderr, "hotness_bench: batch %zu: %s\n", j,
                     std::string(batch.status().message()).c_str());
        failed = true;
        return;
      }
      use(thread, j, *batch);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < f.threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& t : pool) t.join();
  return !failed;
}

// Visits of one epoch's batches (each node of a batch's node blocks once), built on `threads`.
bool CountEpoch(const Graph& g, const Flags& f, int epoch, Counts* out, double* seconds) {
  std::vector<Counts> per_thread(static_cast<size_t>(f.threads), ZeroCounts(g));
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok =
      ForEachBatch(g, f, EpochJobs(g, epoch, f.batch_size),
                   [&](int thread, size_t, const engine::Minibatch& batch) {
                     Counts& counts = per_thread[static_cast<size_t>(thread)];
                     for (size_t t = 0; t < batch.nodes.size() && t < counts.size(); ++t) {
                       for (const int64_t id : batch.nodes[t].ids) {
                         ++counts[t][static_cast<size_t>(id)];
                       }
                     }
                   });
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ok) return false;
  *out = ZeroCounts(g);
  for (const Counts& c : per_thread) Accumulate(c, *out);
  return true;
}

// The node ids of each of epoch `epoch`'s batches ([batch][node type][ids]), the parts' batches
// taken in turn (part 0's first, part 1's first, part 0's second, ...).
bool EpochBatchIds(const Graph& g, const Flags& f, int epoch,
                   std::vector<std::vector<std::vector<int64_t>>>* out) {
  const std::vector<BatchJob> by_part = EpochJobs(g, epoch, f.batch_size);
  std::vector<std::vector<BatchJob>> queues(g.locals.size());
  for (const BatchJob& j : by_part) queues[static_cast<size_t>(j.part)].push_back(j);
  std::vector<BatchJob> jobs;
  for (size_t i = 0; jobs.size() < by_part.size(); ++i) {
    for (const auto& q : queues) {
      if (i < q.size()) jobs.push_back(q[i]);
    }
  }
  out->assign(jobs.size(), {});
  return ForEachBatch(g, f, jobs, [&](int, size_t j, const engine::Minibatch& batch) {
    for (const auto& block : batch.nodes) (*out)[j].push_back(block.ids);
  });
}

// Of the rows of `batches` outside each type's first `fraction` of `ranked` ids, the share that
// one of the `window` batches before also holds.
double ReuseWithin(const std::vector<std::vector<std::vector<int64_t>>>& batches,
                   const std::vector<std::vector<int64_t>>& ranked, double fraction, int window) {
  std::vector<std::vector<bool>> on_device;
  std::vector<std::vector<int64_t>> last_seen;  // [type][id]: batch index, or -1
  for (const auto& ids : ranked) {
    const auto k = static_cast<size_t>(std::llround(fraction * static_cast<double>(ids.size())));
    std::vector<bool> in(ids.size(), false);
    for (size_t i = 0; i < k; ++i) in[static_cast<size_t>(ids[i])] = true;
    on_device.push_back(std::move(in));
    last_seen.emplace_back(ids.size(), -1);
  }
  double off = 0, reused = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    const auto batch = static_cast<int64_t>(b);
    for (size_t t = 0; t < batches[b].size() && t < ranked.size(); ++t) {
      for (const int64_t id : batches[b][t]) {
        const auto i = static_cast<size_t>(id);
        if (!on_device[t][i]) {
          off += 1;
          if (last_seen[t][i] >= 0 && batch - last_seen[t][i] <= window) reused += 1;
        }
        last_seen[t][i] = batch;
      }
    }
  }
  return off > 0 ? reused / off : 0;
}

// In- and out-degree of each node over every edge type and part.
void Degrees(const Graph& g, Counts* in, Counts* out) {
  *in = ZeroCounts(g);
  *out = ZeroCounts(g);
  for (const auto& local : g.locals) {
    for (const engine::EdgeType& et : local->edge_types()) {
      const common::CscView& csc = et.shard->csc;
      const int64_t begin = local->node_types()[static_cast<size_t>(et.dst)].shard->begin;
      std::vector<uint32_t>& in_t = (*in)[static_cast<size_t>(et.dst)];
      std::vector<uint32_t>& out_t = (*out)[static_cast<size_t>(et.src)];
      for (int64_t v = 0; v < csc.num_dst_nodes(); ++v) {
        in_t[static_cast<size_t>(begin + v)] +=
            static_cast<uint32_t>(csc.EdgeEnd(v) - csc.EdgeBegin(v));
        for (const int64_t u : csc.InNeighbors(v)) ++out_t[static_cast<size_t>(u)];
      }
    }
  }
}

// One node type's ids, hottest first: by `key` descending, then `tie` descending (if given),
// then the lower id.
template <typename Key>
std::vector<int64_t> Ranked(const std::vector<Key>& key, const std::vector<uint32_t>* tie) {
  std::vector<int64_t> ids(key.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  std::sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    if (key[ua] != key[ub]) return key[ua] > key[ub];
    if (tie != nullptr && (*tie)[ua] != (*tie)[ub]) return (*tie)[ua] > (*tie)[ub];
    return a < b;
  });
  return ids;
}

// Epoch 1's visits plus each node's degree (out- or in-) scaled to one epoch's worth of visits
// (the type's visits over its edges): degree as a prior that the counts outweigh where they are
// many.
std::vector<std::vector<double>> Blend(const Counts& visits, const Counts& degree) {
  std::vector<std::vector<double>> out;
  for (size_t t = 0; t < visits.size(); ++t) {
    double v = 0, d = 0;
    for (const uint32_t x : visits[t]) v += x;
    for (const uint32_t x : degree[t]) d += x;
    const double per_edge = d > 0 ? v / d : 0;
    std::vector<double> key(visits[t].size());
    for (size_t i = 0; i < key.size(); ++i) key[i] = visits[t][i] + per_edge * degree[t][i];
    out.push_back(std::move(key));
  }
  return out;
}

// Share of `eval`'s visits that fall on the first `fraction` of each type's ranked ids.
double HitRate(const std::vector<std::vector<int64_t>>& ranked, const Counts& eval,
               double fraction) {
  double hits = 0, visits = 0;
  for (size_t t = 0; t < eval.size(); ++t) {
    const auto k =
        static_cast<size_t>(std::llround(fraction * static_cast<double>(eval[t].size())));
    for (size_t i = 0; i < ranked[t].size(); ++i) {
      const double v = eval[t][static_cast<size_t>(ranked[t][i])];
      visits += v;
      if (i < k) hits += v;
    }
  }
  return visits > 0 ? hits / visits : 0;
}

std::string Pct(double fraction) {
  const double pct = 100 * fraction;
  char buf[32];
  std::snprintf(buf, sizeof buf, pct == std::floor(pct) ? "%.0f" : "%.1f", pct);
  return buf;
}

absl::StatusOr<Graph> Load(const std::string& dir) {
  absl::StatusOr<InProcessParts> parts = LoadInProcessParts(dir);
  if (!parts.ok()) return parts.status();
  Graph g;
  static_cast<InProcessParts&>(g) = *std::move(parts);
  for (const engine::NodeType& t : g.locals[0]->node_types()) {
    g.num_nodes.push_back(t.book->num_nodes());
  }
  return g;
}

int Run(const Flags& f) {
  absl::StatusOr<Graph> loaded = Load(f.partition);
  if (!loaded.ok()) {
    std::fprintf(stderr, "hotness_bench: %s\n", std::string(loaded.status().message()).c_str());
    return 1;
  }
  const Graph& g = *loaded;
  int64_t rows = 0;
  for (const int64_t n : g.num_nodes) rows += n;
  std::fprintf(stderr, "hotness_bench: %zu parts, %zu node types, %lld rows\n", g.locals.size(),
               g.num_nodes.size(), static_cast<long long>(rows));
  PrintResult("num_rows", static_cast<double>(rows), "rows");

  Counts epoch1, epoch2, eval = ZeroCounts(g);
  double s1 = 0, s2 = 0;
  if (!CountEpoch(g, f, 1, &epoch1, &s1) || !CountEpoch(g, f, 2, &epoch2, &s2)) return 1;
  PrintResult("seconds_per_presample_epoch", 0.5 * (s1 + s2), "s");
  for (int e = 0; e < f.eval_epochs; ++e) {
    Counts c;
    double s = 0;
    if (!CountEpoch(g, f, 3 + e, &c, &s)) return 1;
    Accumulate(c, eval);
  }
  Counts in_degree, out_degree;
  Degrees(g, &in_degree, &out_degree);
  Counts both = epoch1;
  Accumulate(epoch2, both);

  struct Ranking {
    std::string name;
    std::vector<std::vector<int64_t>> ids;  // per node type
  };
  auto rank = [&](const std::string& name, const auto& key, const Counts* tie) {
    Ranking r{name, {}};
    for (size_t t = 0; t < key.size(); ++t) {
      r.ids.push_back(Ranked(key[t], tie != nullptr ? &(*tie)[t] : nullptr));
    }
    return r;
  };
  std::vector<Ranking> rankings;
  rankings.push_back(rank("presample", epoch1, nullptr));
  rankings.push_back(rank("presample_degree", epoch1, &out_degree));
  rankings.push_back(rank("presample2", both, nullptr));
  rankings.push_back(rank("presample_plus_degree", Blend(epoch1, out_degree), nullptr));
  rankings.push_back(rank("presample_plus_in_degree", Blend(epoch1, in_degree), nullptr));
  rankings.push_back(rank("in_degree", in_degree, nullptr));
  rankings.push_back(rank("out_degree", out_degree, nullptr));
  rankings.push_back(rank("oracle", eval, nullptr));
  for (const double fraction : f.fractions) {
    const std::string pct = Pct(fraction);
    const std::string base = "hit_rate_" + pct + "pct_presample";
    const double base_rate = HitRate(rankings[0].ids, eval, fraction);
    PrintResult(base, base_rate, "share");
    for (size_t r = 1; r < rankings.size(); ++r) {
      PrintCompared("hit_rate_" + pct + "pct_" + rankings[r].name,
                    HitRate(rankings[r].ids, eval, fraction), "share", base, base_rate);
    }
    PrintResult("presample_in_sample_hit_rate_" + pct + "pct",
                HitRate(rankings[0].ids, epoch1, fraction), "share");
  }
  if (f.reuse_windows.empty()) return 0;
  std::vector<std::vector<std::vector<int64_t>>> batches;
  if (!EpochBatchIds(g, f, 3, &batches)) return 1;
  double batch_rows = 0;
  for (const auto& b : batches) {
    for (const auto& ids : b) batch_rows += static_cast<double>(ids.size());
  }
  PrintResult("rows_per_batch", batches.empty() ? 0 : batch_rows / batches.size(), "rows");
  for (const double fraction : f.fractions) {
    for (const int window : f.reuse_windows) {
      PrintResult("reuse_" + Pct(fraction) + "pct_within_" + std::to_string(window),
                  ReuseWithin(batches, rankings[0].ids, fraction, window), "share");
    }
  }
  return 0;
}

bool ParseFractions(const std::string& text, std::vector<double>* out) {
  out->clear();
  for (const absl::string_view s : absl::StrSplit(text, ',')) {
    double v = 0;
    if (!absl::SimpleAtod(s, &v) || !(v > 0 && v <= 1)) return false;
    out->push_back(v);
  }
  return !out->empty();
}

// "1,2,4" (batches before), or "none".
bool ParseWindows(const std::string& text, std::vector<int>* out) {
  out->clear();
  if (text == "none") return true;
  for (const absl::string_view s : absl::StrSplit(text, ',')) {
    int v = 0;
    if (!absl::SimpleAtoi(s, &v) || v < 1) return false;
    out->push_back(v);
  }
  return !out->empty();
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  if (argc % 2 != 1) return false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--partition") {
      f->partition = v;
    } else if (k == "--batch-size" && absl::SimpleAtoi(v, &f->batch_size)) {
    } else if (k == "--eval-epochs" && absl::SimpleAtoi(v, &f->eval_epochs)) {
    } else if (k == "--threads" && absl::SimpleAtoi(v, &f->threads)) {
    } else if (k == "--fanouts") {
      if (!ParseFanouts(v, &f->fanouts)) return false;
    } else if (k == "--fractions") {
      if (!ParseFractions(v, &f->fractions)) return false;
    } else if (k == "--reuse-windows") {
      if (!ParseWindows(v, &f->reuse_windows)) return false;
    } else {
      std::fprintf(stderr, "hotness_bench: bad flag %s %s\n", k.c_str(), v.c_str());
      return false;
    }
  }
  return !f->partition.empty() && f->batch_size > 0 && f->eval_epochs > 0 && f->threads > 0 &&
         f->threads <= 256 && !f->fanouts.empty();
}

}  // namespace
}  // namespace graphshard::bench

int main(int argc, char** argv) {
  graphshard::bench::Flags f;
  if (!graphshard::bench::ParseFlags(argc, argv, &f)) {
    std::fprintf(stderr,
                 "usage: hotness_bench --partition DIR [--batch-size 1024] [--fanouts 15,10,5] "
                 "[--fractions 0.05,0.1,0.25] [--eval-epochs 2] [--threads T] "
                 "[--reuse-windows 1,2,4|none]\n");
    return 2;
  }
  graphshard::server::ReexecWithMallocTunables(argv, 256);
  return graphshard::bench::Run(f);
}
