// Reading and writing OGB's raw homogeneous layout (see input_graph.h).

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "partitioner/input_graph.h"
#include "partitioner/internal/atomic_dir.h"
#include "partitioner/internal/gz_csv.h"

namespace graphshard::partitioner {
namespace {

namespace fs = std::filesystem;
using internal::GzLineReader;

// Counts come from the files; a bogus huge one must not turn into a huge allocation before
// the rows themselves disagree with it.
size_t ReserveHint(int64_t count) {
  return static_cast<size_t>(std::clamp<int64_t>(count, 0, int64_t{1} << 24));
}

// The single value of a one-line count file (num-node-list, num-edge-list).
absl::StatusOr<int64_t> ReadCount(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<int64_t> values, internal::ReadIntColumn(path));
  if (values.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected one line (a homogeneous graph), found ", values.size()));
  }
  if (values[0] < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":1: negative count ", values[0]));
  }
  return values[0];
}

absl::Status ReadEdges(const std::string& path, int64_t num_nodes, int64_t num_edges,
                       InputGraph& g) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  g.src.reserve(ReserveHint(num_edges));
  g.dst.reserve(ReserveHint(num_edges));
  absl::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    size_t comma = line.find(',');
    int64_t s = 0, d = 0;
    if (comma == absl::string_view::npos || !internal::ParseInt64(line.substr(0, comma), &s) ||
        !internal::ParseInt64(line.substr(comma + 1), &d)) {
      return reader->Error(absl::StrCat("expected \"src,dst\", got \"", line.substr(0, 60), "\""));
    }
    if (s < 0 || s >= num_nodes || d < 0 || d >= num_nodes) {
      return reader->Error(absl::StrCat("edge ", s, ",", d, " has a node id outside [0, ",
                                        num_nodes, ")"));
    }
    g.src.push_back(s);
    g.dst.push_back(d);
  }
  if (g.num_edges() != num_edges) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": has ", g.num_edges(),
                                                   " edges, num-edge-list.csv.gz says ",
                                                   num_edges));
  }
  return absl::OkStatus();
}

absl::Status ReadFeatures(const std::string& path, InputGraph& g) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  int64_t rows = 0;
  absl::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (rows == g.num_nodes) {
      return reader->Error(absl::StrCat("more rows than the ", g.num_nodes, " nodes"));
    }
    int64_t cols = 0;
    size_t start = 0;
    while (true) {
      size_t comma = line.find(',', start);
      absl::string_view field = line.substr(start, comma == absl::string_view::npos
                                                       ? absl::string_view::npos
                                                       : comma - start);
      float v = 0;
      if (!internal::ParseFloat(field, &v)) {
        return reader->Error(absl::StrCat("column ", cols + 1, ": expected a number, got \"",
                                          field.substr(0, 40), "\""));
      }
      g.features.push_back(v);
      ++cols;
      if (comma == absl::string_view::npos) break;
      start = comma + 1;
    }
    if (rows == 0) {
      g.feat_dim = cols;
      g.features.reserve(std::min(ReserveHint(g.num_nodes) * static_cast<size_t>(cols),
                                  ReserveHint(INT64_MAX)));
    } else if (cols != g.feat_dim) {
      return reader->Error(absl::StrCat("has ", cols, " columns, line 1 has ", g.feat_dim));
    }
    ++rows;
  }
  if (rows != g.num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", rows, " rows, expected one per node (", g.num_nodes, ")"));
  }
  return absl::OkStatus();
}

absl::Status ReadLabels(const std::string& path, InputGraph& g) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  g.labels.reserve(ReserveHint(g.num_nodes));
  absl::string_view line;
  int64_t max_label = -1;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (std::ssize(g.labels) == g.num_nodes) {
      return reader->Error(absl::StrCat("more rows than the ", g.num_nodes, " nodes"));
    }
    int64_t label = 0;
    float f = 0;
    if (!internal::ParseInt64(line, &label)) {
      // OGB writes some labels as floats, and "nan" for unlabelled nodes.
      if (!internal::ParseFloat(line, &f) || (!std::isnan(f) && f != std::floor(f)) ||
          std::fabs(f) > 1e15f) {
        return reader->Error(absl::StrCat("expected an integer label, got \"",
                                          line.substr(0, 40), "\""));
      }
      label = std::isnan(f) ? -1 : static_cast<int64_t>(f);
    }
    if (label < 0) label = -1;
    max_label = std::max(max_label, label);
    g.labels.push_back(label);
  }
  if (std::ssize(g.labels) != g.num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": has ", g.labels.size(),
                                                   " rows, expected one per node (",
                                                   g.num_nodes, ")"));
  }
  g.num_classes = max_label + 1;
  return absl::OkStatus();
}

absl::StatusOr<std::string> FindSplitDir(const std::string& dir, const std::string& name) {
  std::string root = absl::StrCat(dir, "/split");
  if (!name.empty()) {
    std::string path = absl::StrCat(root, "/", name);
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      return absl::NotFoundError(absl::StrCat(path, ": no such split folder"));
    }
    return path;
  }
  std::error_code ec;
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory()) found.push_back(entry.path().filename().string());
  }
  if (ec) return absl::NotFoundError(absl::StrCat(root, ": cannot list: ", ec.message()));
  if (found.empty()) return absl::NotFoundError(absl::StrCat(root, ": no split folder"));
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    return absl::InvalidArgumentError(absl::StrCat(root, ": several splits (",
                                                   absl::StrJoin(found, ", "),
                                                   "); choose one with --split"));
  }
  return absl::StrCat(root, "/", found[0]);
}

absl::Status ReadSplits(const std::string& split_dir, InputGraph& g) {
  const std::pair<const char*, const char*> kFiles[] = {
      {"train", "train"}, {"valid", "val"}, {"test", "test"}};
  std::vector<bool> seen;
  for (const auto& [file, name] : kFiles) {
    std::string path = absl::StrCat(split_dir, "/", file, ".csv.gz");
    ASSIGN_OR_RETURN(std::vector<int64_t> ids, internal::ReadIntColumn(path));
    seen.assign(static_cast<size_t>(g.num_nodes), false);
    for (size_t i = 0; i < ids.size(); ++i) {
      // ReadIntColumn rejects blank lines, so entry i is on line i + 1.
      if (ids[i] < 0 || ids[i] >= g.num_nodes) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", i + 1, ": node id ", ids[i],
                                                       " outside [0, ", g.num_nodes, ")"));
      }
      if (seen[ids[i]]) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", i + 1, ": node id ", ids[i], " listed twice"));
      }
      seen[ids[i]] = true;
    }
    g.splits[name] = std::move(ids);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<InputGraph> ReadOgbHomogeneous(const std::string& dir,
                                              const OgbReadOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": no such input folder"));
  }
  const std::string raw = absl::StrCat(dir, "/raw/");
  InputGraph g;
  ASSIGN_OR_RETURN(g.num_nodes, ReadCount(raw + "num-node-list.csv.gz"));
  ASSIGN_OR_RETURN(int64_t num_edges, ReadCount(raw + "num-edge-list.csv.gz"));
  RETURN_IF_ERROR(ReadEdges(raw + "edge.csv.gz", g.num_nodes, num_edges, g));
  RETURN_IF_ERROR(ReadFeatures(raw + "node-feat.csv.gz", g));
  RETURN_IF_ERROR(ReadLabels(raw + "node-label.csv.gz", g));
  ASSIGN_OR_RETURN(std::string split_dir, FindSplitDir(dir, options.split_name));
  RETURN_IF_ERROR(ReadSplits(split_dir, g));
  if (options.undirected) MakeUndirected(g);
  return g;
}

namespace {

absl::Status WriteLines(const std::string& path, int64_t rows,
                        const std::function<void(int64_t, std::string*)>& row) {
  ASSIGN_OR_RETURN(auto writer, internal::GzWriter::Create(path));
  std::string line;
  for (int64_t r = 0; r < rows; ++r) {
    line.clear();
    row(r, &line);
    line.push_back('\n');
    RETURN_IF_ERROR(writer->Write(line));
  }
  return writer->Close();
}

}  // namespace

absl::Status WriteOgbHomogeneous(const InputGraph& g, const std::string& dir,
                                 const std::string& split_name) {
  RETURN_IF_ERROR(ValidateInputGraph(g));
  if (split_name.empty() || split_name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("bad split name \"", split_name, "\""));
  }
  ASSIGN_OR_RETURN(internal::AtomicDir out, internal::AtomicDir::Create(dir, /*replace=*/false));
  RETURN_IF_ERROR(out.MakeDirs("raw"));
  RETURN_IF_ERROR(out.MakeDirs(absl::StrCat("split/", split_name)));
  const std::string raw = absl::StrCat(out.tmp_path(), "/raw/");
  RETURN_IF_ERROR(WriteLines(raw + "num-node-list.csv.gz", 1,
                             [&](int64_t, std::string* s) { absl::StrAppend(s, g.num_nodes); }));
  RETURN_IF_ERROR(WriteLines(raw + "num-edge-list.csv.gz", 1,
                             [&](int64_t, std::string* s) { absl::StrAppend(s, g.num_edges()); }));
  RETURN_IF_ERROR(WriteLines(raw + "edge.csv.gz", g.num_edges(), [&](int64_t e, std::string* s) {
    absl::StrAppend(s, g.src[e], ",", g.dst[e]);
  }));
  RETURN_IF_ERROR(WriteLines(raw + "node-feat.csv.gz", g.num_nodes, [&](int64_t v, std::string* s) {
    for (int64_t k = 0; k < g.feat_dim; ++k) {
      if (k > 0) s->push_back(',');
      internal::AppendFloat(g.features[v * g.feat_dim + k], s);
    }
  }));
  RETURN_IF_ERROR(WriteLines(raw + "node-label.csv.gz", g.num_nodes,
                             [&](int64_t v, std::string* s) { absl::StrAppend(s, g.labels[v]); }));
  const std::pair<const char*, const char*> kFiles[] = {
      {"train", "train"}, {"valid", "val"}, {"test", "test"}};
  for (const auto& [file, name] : kFiles) {
    auto it = g.splits.find(name);
    static const std::vector<int64_t> kEmpty;
    const std::vector<int64_t>& ids = it == g.splits.end() ? kEmpty : it->second;
    RETURN_IF_ERROR(WriteLines(
        absl::StrCat(out.tmp_path(), "/split/", split_name, "/", file, ".csv.gz"),
        std::ssize(ids), [&](int64_t i, std::string* s) { absl::StrAppend(s, ids[i]); }));
  }
  return out.Commit();
}

}  // namespace graphshard::partitioner
