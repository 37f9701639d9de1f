// TU-format graph-classification datasets: reading, writing, the Graph form. See tu_dataset.h.

#include "partitioner/tu_dataset.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "partitioner/internal/atomic_dir.h"
#include "partitioner/internal/gen_util.h"
#include "partitioner/internal/gz_csv.h"

namespace graphshard::partitioner {
namespace {

namespace fs = std::filesystem;
using internal::GzLineReader;

constexpr char kIndicatorSuffix[] = "_graph_indicator.txt";
constexpr uint64_t kSplitStream = 0x7475;  // "tu"

std::vector<absl::string_view> Fields(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(", \t"), absl::SkipEmpty());
}

// Calls row(reader, fields) for every line; blank lines are allowed only at the end.
template <typename Fn>
absl::Status ForEachRow(const std::string& path, Fn&& row) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  absl::string_view line;
  int64_t blank_at = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    std::vector<absl::string_view> f = Fields(line);
    if (f.empty()) {
      if (blank_at == 0) blank_at = reader->line_number();
      continue;
    }
    if (blank_at != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", blank_at, ": empty line before more data"));
    }
    RETURN_IF_ERROR(row(*reader, f));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> ReadIntsPerLine(const std::string& path) {
  std::vector<int64_t> values;
  RETURN_IF_ERROR(ForEachRow(path, [&](const GzLineReader& r, const auto& f) {
    int64_t v = 0;
    if (f.size() != 1 || !internal::ParseInt64(f[0], &v)) {
      return r.Error("expected one integer");
    }
    values.push_back(v);
    return absl::OkStatus();
  }));
  return values;
}

absl::Status CheckLineCount(const std::string& path, int64_t got, int64_t want,
                            absl::string_view of_what) {
  if (got == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", got, " lines, expected ", want,
                                                 " (one per ", of_what, ")"));
}

bool IsFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// Writes `rows` plain-text lines: row(r, &line) fills line r (without the newline).
template <typename Fn>
absl::Status WriteLines(const std::string& path, int64_t rows, Fn&& row) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  std::string line;
  for (int64_t r = 0; r < rows && f; ++r) {
    line.clear();
    row(r, &line);
    line.push_back('\n');
    f.write(line.data(), static_cast<std::streamsize>(line.size()));
  }
  f.close();
  if (!f) return absl::InternalError(absl::StrCat(path, ": write failed: ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TuLocation> FindTuDataset(const std::string& dir) {
  for (const std::string& folder : {dir, dir + "/raw"}) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) continue;
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      const std::string file = entry.path().filename().string();
      if (absl::EndsWith(file, kIndicatorSuffix) && file.size() > sizeof(kIndicatorSuffix) - 1) {
        names.push_back(file.substr(0, file.size() - (sizeof(kIndicatorSuffix) - 1)));
      }
    }
    if (names.size() > 1) {
      std::sort(names.begin(), names.end());
      return absl::InvalidArgumentError(absl::StrCat(
          folder, ": several TU datasets (", names[0], ", ", names[1], "); give one folder each"));
    }
    if (names.size() == 1) return TuLocation{folder, names[0]};
  }
  return absl::NotFoundError(absl::StrCat(dir, ": no <DS>", kIndicatorSuffix, " (TU layout)"));
}

absl::StatusOr<TuDataset> ReadTuDataset(const std::string& dir) {
  ASSIGN_OR_RETURN(TuLocation loc, FindTuDataset(dir));
  const std::string base = loc.folder + "/" + loc.name;
  TuDataset d;
  d.name = loc.name;

  const std::string indicator_path = base + kIndicatorSuffix;
  ASSIGN_OR_RETURN(std::vector<int64_t> indicator, ReadIntsPerLine(indicator_path));
  const std::string labels_path = base + "_graph_labels.txt";
  ASSIGN_OR_RETURN(d.graph_labels, ReadIntsPerLine(labels_path));
  d.num_nodes = std::ssize(indicator);
  if (d.num_nodes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(indicator_path, ": no nodes"));
  }
  if (d.graph_labels.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(labels_path, ": no graphs"));
  }
  const int64_t num_graphs = d.num_graphs();
  d.graph_of_node.resize(indicator.size());
  for (int64_t v = 0; v < d.num_nodes; ++v) {
    if (indicator[v] < 1 || indicator[v] > num_graphs) {
      return absl::InvalidArgumentError(
          absl::StrCat(indicator_path, ":", v + 1, ": graph ", indicator[v], " outside 1..",
                       num_graphs, " (", labels_path, " has ", num_graphs, " lines)"));
    }
    d.graph_of_node[v] = indicator[v] - 1;
  }

  const std::string a_path = base + "_A.txt";
  RETURN_IF_ERROR(ForEachRow(a_path, [&](const GzLineReader& r, const auto& f) {
    int64_t i = 0, j = 0;
    if (f.size() != 2 || !internal::ParseInt64(f[0], &i) || !internal::ParseInt64(f[1], &j)) {
      return r.Error("expected two node ids \"i, j\"");
    }
    if (i < 1 || i > d.num_nodes || j < 1 || j > d.num_nodes) {
      return r.Error(absl::StrCat("node id outside 1..", d.num_nodes, " (the lines of ",
                                  indicator_path, ")"));
    }
    if (d.graph_of_node[i - 1] != d.graph_of_node[j - 1]) {
      return r.Error(absl::StrCat("edge ", i, " -> ", j, " joins graph ", d.graph_of_node[i - 1] + 1,
                                  " and graph ", d.graph_of_node[j - 1] + 1));
    }
    d.src.push_back(i - 1);
    d.dst.push_back(j - 1);
    return absl::OkStatus();
  }));

  const std::string node_labels_path = base + "_node_labels.txt";
  if (IsFile(node_labels_path)) {
    RETURN_IF_ERROR(ForEachRow(node_labels_path, [&](const GzLineReader& r, const auto& f) {
      std::vector<int64_t> row(f.size());
      for (size_t c = 0; c < f.size(); ++c) {
        if (!internal::ParseInt64(f[c], &row[c])) return r.Error("expected integer node labels");
      }
      if (!d.node_labels.empty() && row.size() != d.node_labels[0].size()) {
        return r.Error(absl::StrCat(row.size(), " columns, the first line has ",
                                    d.node_labels[0].size()));
      }
      d.node_labels.push_back(std::move(row));
      return absl::OkStatus();
    }));
    RETURN_IF_ERROR(
        CheckLineCount(node_labels_path, std::ssize(d.node_labels), d.num_nodes, "node"));
  }
  const std::string attr_path = base + "_node_attributes.txt";
  if (IsFile(attr_path)) {
    int64_t rows = 0;
    RETURN_IF_ERROR(ForEachRow(attr_path, [&](const GzLineReader& r, const auto& f) {
      if (rows == 0) d.attr_dim = std::ssize(f);
      if (std::ssize(f) != d.attr_dim) {
        return r.Error(absl::StrCat(f.size(), " attributes, the first line has ", d.attr_dim));
      }
      for (absl::string_view field : f) {
        float x = 0;
        if (!internal::ParseFloat(field, &x)) {
          return r.Error(absl::StrCat("not a number: \"", field.substr(0, 30), "\""));
        }
        d.node_attributes.push_back(x);
      }
      ++rows;
      return absl::OkStatus();
    }));
    RETURN_IF_ERROR(CheckLineCount(attr_path, rows, d.num_nodes, "node"));
  }
  return d;
}

absl::Status WriteTuDataset(const TuDataset& d, const std::string& dir) {
  ASSIGN_OR_RETURN(internal::AtomicDir out, internal::AtomicDir::Create(dir, /*replace=*/false));
  const std::string base = out.tmp_path() + "/" + d.name;
  auto write_ints = [&](const std::string& suffix, const std::vector<int64_t>& v, int64_t add) {
    return WriteLines(base + suffix, std::ssize(v), [&](int64_t r, std::string* s) {
      absl::StrAppend(s, v[r] + add);
    });
  };
  RETURN_IF_ERROR(WriteLines(
      base + "_A.txt", std::ssize(d.src),
      [&](int64_t e, std::string* s) { absl::StrAppend(s, d.src[e] + 1, ", ", d.dst[e] + 1); }));
  RETURN_IF_ERROR(write_ints(kIndicatorSuffix, d.graph_of_node, 1));
  RETURN_IF_ERROR(write_ints("_graph_labels.txt", d.graph_labels, 0));
  if (!d.node_labels.empty()) {
    RETURN_IF_ERROR(WriteLines(
        base + "_node_labels.txt", d.num_nodes, [&](int64_t v, std::string* s) {
          for (size_t c = 0; c < d.node_labels[v].size(); ++c) {
            absl::StrAppend(s, c ? ", " : "", d.node_labels[v][c]);
          }
        }));
  }
  if (d.attr_dim > 0) {
    RETURN_IF_ERROR(WriteLines(
        base + "_node_attributes.txt", d.num_nodes, [&](int64_t v, std::string* s) {
          for (int64_t c = 0; c < d.attr_dim; ++c) {
            if (c) s->append(", ");
            internal::AppendFloat(d.node_attributes[v * d.attr_dim + c], s);
          }
        }));
  }
  return out.Commit();
}

absl::StatusOr<Graph> GraphFromTu(const TuDataset& d, uint64_t split_seed) {
  const int64_t n = d.num_nodes, num_graphs = d.num_graphs();
  // Node features: attributes, then each label column one-hot; else the one-hot in-degree.
  std::vector<int64_t> col_min, col_width;
  int64_t feat_dim = d.attr_dim;
  if (!d.node_labels.empty()) {
    for (size_t c = 0; c < d.node_labels[0].size(); ++c) {
      int64_t lo = d.node_labels[0][c], hi = lo;
      for (const auto& row : d.node_labels) lo = std::min(lo, row[c]), hi = std::max(hi, row[c]);
      if (hi - lo >= 1 << 20) {
        return absl::InvalidArgumentError(absl::StrCat(
            d.name, "_node_labels.txt: column ", c + 1, " spans ", hi - lo + 1,
            " values; too many for a one-hot encoding"));
      }
      col_min.push_back(lo);
      col_width.push_back(hi - lo + 1);
      feat_dim += hi - lo + 1;
    }
  }
  const bool degree_features = feat_dim == 0;
  if (degree_features) feat_dim = kMaxDegreeFeature + 1;
  std::vector<float> x(static_cast<size_t>(n * feat_dim), 0.0f);
  if (degree_features) {
    std::vector<int64_t> deg(static_cast<size_t>(n), 0);
    for (int64_t v : d.dst) ++deg[v];
    for (int64_t v = 0; v < n; ++v) x[v * feat_dim + std::min(deg[v], kMaxDegreeFeature)] = 1.0f;
  } else {
    for (int64_t v = 0; v < n; ++v) {
      float* row = &x[v * feat_dim];
      std::copy_n(d.node_attributes.begin() + v * d.attr_dim, d.attr_dim, row);
      int64_t offset = d.attr_dim;
      for (size_t c = 0; c < col_min.size(); ++c) {
        row[offset + d.node_labels[v][c] - col_min[c]] = 1.0f;
        offset += col_width[c];
      }
    }
  }
  // Graph labels -> 0..C-1 in sorted order.
  std::vector<int64_t> classes = d.graph_labels;
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  std::vector<int64_t> labels(static_cast<size_t>(num_graphs));
  for (int64_t g = 0; g < num_graphs; ++g) {
    labels[g] = std::lower_bound(classes.begin(), classes.end(), d.graph_labels[g]) - classes.begin();
  }
  // 80/10/10 split of a seeded shuffle; each split ascending.
  std::vector<int64_t> order(static_cast<size_t>(num_graphs));
  std::iota(order.begin(), order.end(), int64_t{0});
  common::SplitMix64 rng(common::MixSeed(split_seed, kSplitStream));
  internal::Shuffle(order, rng);
  const int64_t n_train = num_graphs * 8 / 10, n_val = num_graphs / 10;
  auto cut = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> ids(order.begin() + begin, order.begin() + end);
    std::sort(ids.begin(), ids.end());
    return Array<int64_t>::Owned(std::move(ids));
  };

  Graph g;
  NodeTypeData& nodes = g.node_types.emplace_back();
  nodes.name = kHomogeneousNodeType;
  nodes.num_nodes = n;
  nodes.feat_dim = feat_dim;
  nodes.features = Array<float>::Owned(std::move(x));
  NodeTypeData& graphs = g.node_types.emplace_back();
  graphs.name = kGraphNodeType;
  graphs.num_nodes = num_graphs;
  graphs.labels = Array<int64_t>::Owned(std::move(labels));
  graphs.num_classes = std::ssize(classes);
  graphs.splits["train"] = cut(0, n_train);
  graphs.splits["val"] = cut(n_train, n_train + n_val);
  graphs.splits["test"] = cut(n_train + n_val, num_graphs);
  EdgeTypeData& edges = g.edge_types.emplace_back();
  edges.src = edges.dst = kHomogeneousNodeType;
  edges.rel = kHomogeneousRelation;
  edges.src_ids = Array<int64_t>::Owned(d.src);
  edges.dst_ids = Array<int64_t>::Owned(d.dst);
  EdgeTypeData& member = g.edge_types.emplace_back();
  member.src = kHomogeneousNodeType;
  member.rel = kMembershipRelation;
  member.dst = kGraphNodeType;
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), int64_t{0});
  member.src_ids = Array<int64_t>::Owned(std::move(all));
  member.dst_ids = Array<int64_t>::Owned(d.graph_of_node);
  return g;
}

bool IsGraphDataset(const Graph& g) {
  if (g.NodeTypeIndex(kHomogeneousNodeType) < 0 || g.NodeTypeIndex(kGraphNodeType) < 0) {
    return false;
  }
  for (const EdgeTypeData& e : g.edge_types) {
    if (e.src == kHomogeneousNodeType && e.rel == kMembershipRelation && e.dst == kGraphNodeType) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::vector<int64_t>> GraphOfNode(const Graph& g) {
  const int node_type = g.NodeTypeIndex(kHomogeneousNodeType);
  if (node_type < 0) return absl::InvalidArgumentError("no node type \"node\"");
  std::vector<int64_t> graph_of(static_cast<size_t>(g.node_types[node_type].num_nodes), -1);
  for (const EdgeTypeData& e : g.edge_types) {
    if (e.src != kHomogeneousNodeType || e.rel != kMembershipRelation || e.dst != kGraphNodeType) {
      continue;
    }
    for (int64_t i = 0; i < e.num_edges(); ++i) {
      int64_t& slot = graph_of[e.src_ids[i]];
      if (slot >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node ", e.src_ids[i], " is in two graphs (", slot, " and ", e.dst_ids[i], ")"));
      }
      slot = e.dst_ids[i];
    }
  }
  for (size_t v = 0; v < graph_of.size(); ++v) {
    if (graph_of[v] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("node ", v, " is in no graph"));
    }
  }
  return graph_of;
}

absl::StatusOr<TuDataset> GenerateGraphs(const GraphsGenerateOptions& o) {
  if (o.num_graphs < 10 || o.num_graphs > (int64_t{1} << 24)) {
    return absl::InvalidArgumentError("--num-graphs must be in [10, 2^24]");
  }
  if (o.min_nodes < 4 || o.max_nodes < o.min_nodes || o.max_nodes > 100000) {
    return absl::InvalidArgumentError(
        "graph sizes: need 4 <= --min-nodes <= --max-nodes <= 100000");
  }
  TuDataset d;
  d.name = "GRAPHS";
  for (int64_t gi = 0; gi < o.num_graphs; ++gi) {
    common::SplitMix64 rng(common::MixSeed(o.seed, static_cast<uint64_t>(gi)));
    const int64_t n =
        o.min_nodes + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(o.max_nodes - o.min_nodes + 1)));
    const int64_t m = 2 * n - 3;
    const int64_t label = gi % 2;
    std::vector<std::pair<int64_t, int64_t>> edges;
    if (label == 0) {
      // Preferential attachment from a triangle: each new node picks 2 distinct earlier nodes,
      // each with probability proportional to its degree (a uniform pick from edge endpoints).
      std::vector<int64_t> ends = {0, 1, 1, 2, 2, 0};
      edges = {{0, 1}, {1, 2}, {2, 0}};
      for (int64_t v = 3; v < n; ++v) {
        const int64_t a = ends[rng.Below(ends.size())];
        int64_t b = a;
        while (b == a) b = ends[rng.Below(ends.size())];
        for (int64_t u : {a, b}) {
          edges.emplace_back(u, v);
          ends.push_back(u);
          ends.push_back(v);
        }
      }
    } else {
      std::set<std::pair<int64_t, int64_t>> seen;
      while (std::ssize(edges) < m) {
        int64_t a = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n)));
        int64_t b = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n)));
        if (a == b) continue;
        if (a > b) std::swap(a, b);
        if (!seen.insert({a, b}).second) continue;
        edges.emplace_back(a, b);
      }
    }
    const int64_t base = d.num_nodes;
    for (auto [a, b] : edges) {  // both directions, as TU files list undirected graphs
      d.src.push_back(base + a), d.dst.push_back(base + b);
      d.src.push_back(base + b), d.dst.push_back(base + a);
    }
    d.graph_of_node.insert(d.graph_of_node.end(), static_cast<size_t>(n), gi);
    d.num_nodes += n;
    d.graph_labels.push_back(label);
  }
  return d;
}

}  // namespace graphshard::partitioner
