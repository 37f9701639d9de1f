#include "partitioner/generate_papers.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numbers>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "partitioner/internal/atomic_dir.h"
#include "partitioner/internal/parallel_chunks.h"
#include "partitioner/internal/positional_npy.h"

namespace graphshard::partitioner {
namespace {

using internal::ParallelChunks;
using internal::PositionalNpy;

// ogbn-papers100M: 1,615,685,872 citations over 111,059,956 papers; split sizes 1,207,179 /
// 125,265 / 214,338.
constexpr double kMeanCitations = 1'615'685'872.0 / 111'059'956.0;
constexpr double kTrainShare = 1'207'179.0 / 111'059'956.0;
constexpr double kValShare = 125'265.0 / 111'059'956.0;
constexpr double kTestShare = 214'338.0 / 111'059'956.0;
constexpr double kCitationSigma = 1.0;  // log-normal spread of citations per paper
constexpr int64_t kMaxCitations = 5000;
constexpr double kIntraClass = 0.8;
constexpr double kNoiseSigma = 8.0;  // sqrt(F / 2) for F = 128, as products uses
constexpr int64_t kChunk = int64_t{1} << 15;  // nodes per work item; fixed (see header)

enum Stream : uint64_t { kNode = 11, kEdges, kFeatures, kCentroids };
enum Role : uint8_t { kNone = 0, kTrain, kVal, kTest };

common::SplitMix64 NodeRng(uint64_t seed, Stream s, int64_t u) {
  return common::SplitMix64(common::MixSeed(common::MixSeed(seed, s), static_cast<uint64_t>(u)));
}

// Per-node draws every later pass reads.
struct Nodes {
  int64_t n = 0;
  std::vector<uint8_t> cls;
  std::vector<uint8_t> role;
  std::vector<int64_t> cites_begin;  // [n + 1]: paper u's citations are [begin[u], begin[u+1])
  std::vector<double> cum_all;       // prefix sums of popularity over ids
  // Papers grouped by class, ascending ids, with per-class popularity prefix sums.
  std::vector<int64_t> class_begin;  // [classes + 1]
  std::vector<int64_t> members;
  std::vector<double> cum_class;
};

absl::Status DrawNodes(uint64_t seed, int threads, Nodes& g) {
  const int64_t n = g.n;
  g.cls.resize(n);
  g.role.resize(n);
  g.cites_begin.assign(n + 1, 0);
  std::vector<double> weight(n);
  const double mu = std::log(kMeanCitations) - kCitationSigma * kCitationSigma / 2;
  RETURN_IF_ERROR(ParallelChunks(n, kChunk, threads, [&](int64_t, int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      common::SplitMix64 rng = NodeRng(seed, kNode, u);
      g.cls[u] = static_cast<uint8_t>(rng.Below(kPapersClasses));
      weight[u] = 1.0 / std::sqrt(1.0 - rng.Uniform());  // (0, 1] ^ -0.5
      const double z = std::sqrt(-2.0 * std::log(1.0 - rng.Uniform())) *
                       std::cos(2.0 * std::numbers::pi * rng.Uniform());
      const auto d = static_cast<int64_t>(std::llround(std::exp(mu + kCitationSigma * z)));
      g.cites_begin[u + 1] = std::min({d, u, kMaxCitations});
      const double r = rng.Uniform();
      g.role[u] = r < kTrainShare                           ? kTrain
                  : r < kTrainShare + kValShare             ? kVal
                  : r < kTrainShare + kValShare + kTestShare ? kTest
                                                             : kNone;
    }
    return absl::OkStatus();
  }));
  for (int64_t u = 0; u < n; ++u) g.cites_begin[u + 1] += g.cites_begin[u];
  // Popularity prefix sums: per fixed chunk in parallel, then chunk offsets in order.
  g.cum_all.resize(n);
  std::vector<double> chunk_sum(internal::NumChunks(n, kChunk), 0.0);
  RETURN_IF_ERROR(ParallelChunks(n, kChunk, threads, [&](int64_t c, int64_t b, int64_t e) {
    double s = 0;
    for (int64_t u = b; u < e; ++u) g.cum_all[u] = (s += weight[u]);
    chunk_sum[c] = s;
    return absl::OkStatus();
  }));
  double carry = 0;
  for (double& s : chunk_sum) carry = (s += carry);  // now the inclusive offset per chunk
  RETURN_IF_ERROR(ParallelChunks(n, kChunk, threads, [&](int64_t c, int64_t b, int64_t e) {
    const double before = c == 0 ? 0.0 : chunk_sum[c - 1];
    for (int64_t u = b; u < e; ++u) g.cum_all[u] += before;
    return absl::OkStatus();
  }));
  // Group by class (a counting sort keeps ids ascending within a class).
  g.class_begin.assign(kPapersClasses + 1, 0);
  for (uint8_t c : g.cls) ++g.class_begin[c + 1];
  for (int c = 0; c < kPapersClasses; ++c) g.class_begin[c + 1] += g.class_begin[c];
  std::vector<int64_t> next(g.class_begin.begin(), g.class_begin.end() - 1);
  g.members.resize(n);
  g.cum_class.resize(n);
  std::vector<double> running(kPapersClasses, 0.0);
  for (int64_t u = 0; u < n; ++u) {
    const int c = g.cls[u];
    g.members[next[c]] = u;
    g.cum_class[next[c]++] = (running[c] += weight[u]);
  }
  return absl::OkStatus();
}

// One older paper for u to cite (u >= 1).
int64_t DrawCited(const Nodes& g, int64_t u, common::SplitMix64& rng) {
  if (rng.Uniform() < kIntraClass) {
    const int c = g.cls[u];
    const int64_t* first = g.members.data() + g.class_begin[c];
    const int64_t* last = g.members.data() + g.class_begin[c + 1];
    const int64_t k = std::lower_bound(first, last, u) - first;  // members older than u
    if (k > 0) {
      const double* cum = g.cum_class.data() + g.class_begin[c];
      const double x = rng.Uniform() * cum[k - 1];
      const int64_t i = std::min<int64_t>(std::upper_bound(cum, cum + k, x) - cum, k - 1);
      return first[i];
    }
  }
  const double* cum = g.cum_all.data();
  const double x = rng.Uniform() * cum[u - 1];
  return std::min<int64_t>(std::upper_bound(cum, cum + u, x) - cum, u - 1);
}

// Paper u's distinct citations into `out`. Heavy popularity can make the last few distinct
// draws slow for a paper citing most of its elders; past a try budget, the nearest unused
// older ids fill the rest (deterministic, and only ever hit by the first few thousand papers).
void DrawCitations(const Nodes& g, uint64_t seed, int64_t u, std::vector<int64_t>& out,
                   absl::flat_hash_set<int64_t>& seen) {
  const int64_t d = g.cites_begin[u + 1] - g.cites_begin[u];
  out.clear();
  seen.clear();
  common::SplitMix64 rng = NodeRng(seed, kEdges, u);
  for (int64_t tries = 0; std::ssize(out) < d && tries < 8 * d + 16; ++tries) {
    const int64_t v = DrawCited(g, u, rng);
    if (seen.insert(v).second) out.push_back(v);
  }
  for (int64_t v = u - 1; std::ssize(out) < d; --v) {
    if (seen.insert(v).second) out.push_back(v);
  }
}

absl::Status WriteEdges(const Nodes& g, uint64_t seed, int threads, PositionalNpy& file,
                        std::vector<int32_t>& in_degree) {
  const int64_t m = g.cites_begin[g.n];
  return ParallelChunks(g.n, kChunk, threads, [&](int64_t, int64_t b, int64_t e) {
    const int64_t first = g.cites_begin[b], count = g.cites_begin[e] - first;
    std::vector<int64_t> citing, cited, one;
    citing.reserve(count);
    cited.reserve(count);
    absl::flat_hash_set<int64_t> seen;
    for (int64_t u = b; u < e; ++u) {
      DrawCitations(g, seed, u, one, seen);
      for (int64_t v : one) {
        citing.push_back(u);
        cited.push_back(v);
        std::atomic_ref<int32_t>(in_degree[v]).fetch_add(1, std::memory_order_relaxed);
      }
    }
    // Row 0 (sources): citing then, for the reverse edges, cited; row 1 the other way round.
    RETURN_IF_ERROR(file.WriteAt<int64_t>(first, citing));
    RETURN_IF_ERROR(file.WriteAt<int64_t>(m + first, cited));
    RETURN_IF_ERROR(file.WriteAt<int64_t>(2 * m + first, cited));
    return file.WriteAt<int64_t>(3 * m + first, citing);
  });
}

absl::Status WriteNodeArrays(const Nodes& g, uint64_t seed, int threads, const std::string& root) {
  const int64_t n = g.n, f = kPapersFeatures;
  std::vector<float> centroids(static_cast<size_t>(kPapersClasses * f));
  common::SplitMix64 crng = NodeRng(seed, kCentroids, 0);
  for (float& x : centroids) {
    x = static_cast<float>(std::sqrt(-2.0 * std::log(1.0 - crng.Uniform())) *
                           std::cos(2.0 * std::numbers::pi * crng.Uniform()));
  }
  ASSIGN_OR_RETURN(PositionalNpy x, PositionalNpy::Create(root + "/x.npy", common::DType::kFloat32,
                                                          {n, f}));
  ASSIGN_OR_RETURN(PositionalNpy y,
                   PositionalNpy::Create(root + "/y.npy", common::DType::kInt64, {n}));
  auto write_chunk = [&](int64_t, int64_t b, int64_t e) {
    std::vector<float> rows(static_cast<size_t>((e - b) * f));
    std::vector<int64_t> labels(static_cast<size_t>(e - b));
    for (int64_t u = b; u < e; ++u) {
      common::SplitMix64 rng = NodeRng(seed, kFeatures, u);
      float* row = rows.data() + (u - b) * f;
      const float* centroid = centroids.data() + g.cls[u] * f;
      for (int64_t k = 0; k < f; k += 2) {  // Box-Muller: both values of each pair
        const double r = kNoiseSigma * std::sqrt(-2.0 * std::log(1.0 - rng.Uniform()));
        const double a = 2.0 * std::numbers::pi * rng.Uniform();
        row[k] = centroid[k] + static_cast<float>(r * std::cos(a));
        row[k + 1] = centroid[k + 1] + static_cast<float>(r * std::sin(a));
      }
      labels[u - b] = g.role[u] == kNone ? -1 : g.cls[u];
    }
    RETURN_IF_ERROR(x.WriteAt<float>(b * f, rows));
    return y.WriteAt<int64_t>(b, labels);
  };
  RETURN_IF_ERROR(ParallelChunks(n, kChunk, threads, write_chunk));
  RETURN_IF_ERROR(x.Close());
  return y.Close();
}

absl::Status WriteSplits(const Nodes& g, const std::string& root, PapersStats& stats) {
  std::vector<int64_t> ids[4];
  for (int64_t u = 0; u < g.n; ++u) {
    if (g.role[u] != kNone) ids[g.role[u]].push_back(u);
  }
  const char* names[4] = {"", "train", "val", "test"};
  for (int r = kTrain; r <= kTest; ++r) {
    ASSIGN_OR_RETURN(PositionalNpy f,
                     PositionalNpy::Create(absl::StrCat(root, "/", names[r], "_idx.npy"),
                                           common::DType::kInt64, {std::ssize(ids[r])}));
    RETURN_IF_ERROR(f.WriteAt<int64_t>(0, ids[r]));
    RETURN_IF_ERROR(f.Close());
  }
  stats.train = std::ssize(ids[kTrain]);
  stats.val = std::ssize(ids[kVal]);
  stats.test = std::ssize(ids[kTest]);
  return absl::OkStatus();
}

void DegreeStats(const Nodes& g, const std::vector<int32_t>& in_degree, PapersStats& stats) {
  std::vector<int64_t> histogram;
  for (int64_t u = 0; u < g.n; ++u) {
    const int64_t d = in_degree[u] + g.cites_begin[u + 1] - g.cites_begin[u];
    if (d >= std::ssize(histogram)) histogram.resize(d + 1, 0);
    ++histogram[d];
  }
  stats.max_degree = std::ssize(histogram) - 1;
  stats.isolated = histogram[0];
  int64_t seen = 0;
  for (int64_t d = 0; d < std::ssize(histogram); ++d) {
    if (seen < (g.n + 1) / 2 && seen + histogram[d] >= (g.n + 1) / 2) stats.median_degree = d;
    if (seen < g.n * 99 / 100 && seen + histogram[d] >= g.n * 99 / 100) stats.p99_degree = d;
    seen += histogram[d];
  }
}

class StepLog {
 public:
  explicit StepLog(std::ostream* log) : log_(log), start_(Clock::now()), last_(start_) {}
  void Done(const std::string& step) {
    const auto now = Clock::now();
    if (log_ != nullptr) {
      *log_ << absl::StrFormat("[graphshard-partition] papers: %s in %.1f s\n", step,
                               std::chrono::duration<double>(now - last_).count());
    }
    last_ = now;
  }
  double Total() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream* log_;
  Clock::time_point start_, last_;
};

}  // namespace

absl::StatusOr<PapersStats> GeneratePapers(const PapersOptions& o, const std::string& dir) {
  if (o.num_nodes == 0 && !(o.scale > 0 && o.scale <= 100)) {
    return absl::InvalidArgumentError(absl::StrCat("--scale must be in (0, 100], not ", o.scale));
  }
  const int64_t n = o.num_nodes > 0 ? o.num_nodes
                                    : std::llround(static_cast<double>(kPapersFullNodes) * o.scale);
  if (n < 1000 || n > (int64_t{1} << 34)) {
    return absl::InvalidArgumentError(
        absl::StrCat("papers: ", n, " nodes; need 1,000 to 2^34 (raise or lower --scale)"));
  }
  if (o.threads < 0 || o.threads > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("--threads must be in [0, 4096], not ", o.threads));
  }
  const int threads =
      o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ASSIGN_OR_RETURN(internal::AtomicDir out, internal::AtomicDir::Create(dir, o.replace));
  const std::string root = out.tmp_path();
  StepLog steps(o.log);
  Nodes g;
  g.n = n;
  RETURN_IF_ERROR(DrawNodes(o.seed, threads, g));
  steps.Done(absl::StrCat("drew ", n, " papers"));
  const int64_t m = g.cites_begin[n];
  std::vector<int32_t> in_degree(n, 0);
  {
    ASSIGN_OR_RETURN(PositionalNpy edges, PositionalNpy::Create(root + "/edge_index.npy",
                                                                common::DType::kInt64, {2, 2 * m}));
    RETURN_IF_ERROR(WriteEdges(g, o.seed, threads, edges, in_degree));
    RETURN_IF_ERROR(edges.Close());
  }
  steps.Done(absl::StrCat("wrote ", m, " citations (", 2 * m, " directed edges)"));
  RETURN_IF_ERROR(WriteNodeArrays(g, o.seed, threads, root));
  steps.Done("wrote features and labels");
  PapersStats stats;
  RETURN_IF_ERROR(WriteSplits(g, root, stats));
  RETURN_IF_ERROR(out.Commit());
  stats.num_nodes = n;
  stats.citations = m;
  stats.mean_degree = 2.0 * static_cast<double>(m) / static_cast<double>(n);
  DegreeStats(g, in_degree, stats);
  stats.threads = threads;
  stats.seconds = steps.Total();
  return stats;
}

}  // namespace graphshard::partitioner
