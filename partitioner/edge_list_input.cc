// A plain edge list (text or CSV, optionally gzip'ed) with optional feature, label and split
// files (text or .npy). See README.md, "Input layouts".

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "partitioner/internal/gz_csv.h"
#include "partitioner/internal/npy_arrays.h"
#include "partitioner/read_input.h"

namespace graphshard::partitioner {
namespace {

using internal::GzLineReader;

// Fields separated by commas, tabs or spaces.
std::vector<absl::string_view> Fields(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(", \t"), absl::SkipEmpty());
}

bool IsComment(absl::string_view line) {
  line = absl::StripLeadingAsciiWhitespace(line);
  return line.empty() || line[0] == '#' || line[0] == '%';
}

absl::Status ReadEdgeRows(const std::string& path, std::vector<int64_t>& src,
                          std::vector<int64_t>& dst) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  absl::string_view line;
  bool first = true;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (IsComment(line)) continue;
    std::vector<absl::string_view> f = Fields(line);
    int64_t s = 0, d = 0;
    const bool numeric =
        f.size() == 2 && internal::ParseInt64(f[0], &s) && internal::ParseInt64(f[1], &d);
    if (!numeric && first && f.size() == 2 && !internal::ParseInt64(f[0], &s)) {
      first = false;  // a header row such as "src,dst"
      continue;
    }
    first = false;
    if (!numeric) {
      return reader->Error(
          absl::StrCat("expected two integer node ids, got \"", line.substr(0, 60), "\""));
    }
    if (s < 0 || d < 0) return reader->Error("negative node id");
    src.push_back(s);
    dst.push_back(d);
  }
  return absl::OkStatus();
}

absl::Status ReadFeatures(const std::string& path, NodeTypeData& t) {
  if (absl::EndsWith(path, ".npy")) {
    ASSIGN_OR_RETURN(internal::NpyArray<float> x, internal::MapNpy<float>(path, 2));
    t.num_nodes = x.rows;
    t.feat_dim = x.cols;
    t.features = std::move(x.values);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  std::vector<float> values;
  absl::string_view line;
  int64_t rows = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (IsComment(line)) continue;
    std::vector<absl::string_view> f = Fields(line);
    if (rows == 0) t.feat_dim = std::ssize(f);
    if (std::ssize(f) != t.feat_dim || f.empty()) {
      return reader->Error(
          absl::StrCat("has ", f.size(), " columns, the first row has ", t.feat_dim));
    }
    for (size_t i = 0; i < f.size(); ++i) {
      float v = 0;
      if (!internal::ParseFloat(f[i], &v)) {
        return reader->Error(absl::StrCat("column ", i + 1, ": expected a number, got \"",
                                          f[i].substr(0, 40), "\""));
      }
      values.push_back(v);
    }
    ++rows;
  }
  t.num_nodes = rows;
  t.features = Array<float>::Owned(std::move(values));
  return absl::OkStatus();
}

// One integer per line (labels: also "nan" or an integral float, negative = unlabelled).
absl::StatusOr<Array<int64_t>> ReadIds(const std::string& path, bool labels) {
  if (absl::EndsWith(path, ".npy")) {
    ASSIGN_OR_RETURN(internal::NpyArray<int64_t> a, internal::MapNpy<int64_t>(path, 1));
    if (a.cols != 1) return absl::InvalidArgumentError(absl::StrCat(path, ": expected shape [n]"));
    return std::move(a.values);
  }
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  std::vector<int64_t> out;
  absl::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (IsComment(line)) continue;
    int64_t v = 0;
    float f = 0;
    if (!internal::ParseInt64(line, &v)) {
      if (!labels || !internal::ParseFloat(line, &f) || (!std::isnan(f) && f != std::floor(f))) {
        return reader->Error(absl::StrCat("expected an integer, got \"", line.substr(0, 40), "\""));
      }
      v = std::isnan(f) ? -1 : static_cast<int64_t>(f);
    }
    out.push_back(v);
  }
  return Array<int64_t>::Owned(std::move(out));
}

}  // namespace

absl::StatusOr<Graph> ReadEdgeList(const std::string& path, const ReadOptions& o) {
  Graph g;
  NodeTypeData& t = g.node_types.emplace_back();
  t.name = kHomogeneousNodeType;
  t.num_nodes = -1;
  if (!o.features.empty()) RETURN_IF_ERROR(ReadFeatures(o.features, t));
  if (!o.labels.empty()) {
    ASSIGN_OR_RETURN(t.labels, ReadIds(o.labels, /*labels=*/true));
    if (t.num_nodes >= 0 && t.labels.size() != t.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(
          o.labels, ": ", t.labels.size(), " labels, the features have ", t.num_nodes, " rows"));
    }
    t.num_nodes = t.labels.size();
    int64_t max_label = -1;
    for (int64_t v : t.labels.span()) max_label = std::max(max_label, v);
    t.num_classes = max_label + 1;
  }
  if (o.num_nodes >= 0) {
    if (t.num_nodes >= 0 && t.num_nodes != o.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat("--num-nodes ", o.num_nodes, " but the ",
                                                     "feature / label files have ", t.num_nodes,
                                                     " rows"));
    }
    t.num_nodes = o.num_nodes;
  }
  std::vector<int64_t> src, dst;
  RETURN_IF_ERROR(ReadEdgeRows(path, src, dst));
  int64_t max_id = -1;
  for (size_t e = 0; e < src.size(); ++e) max_id = std::max({max_id, src[e], dst[e]});
  if (t.num_nodes < 0) t.num_nodes = max_id + 1;
  if (max_id >= t.num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": node id ", max_id, " but only ",
                                                   t.num_nodes,
                                                   " nodes (features, labels or "
                                                   "--num-nodes)"));
  }
  EdgeTypeData& e = g.edge_types.emplace_back();
  e.src = e.dst = kHomogeneousNodeType;
  e.rel = kHomogeneousRelation;
  e.src_ids = Array<int64_t>::Owned(std::move(src));
  e.dst_ids = Array<int64_t>::Owned(std::move(dst));
  const std::pair<const std::string*, const char*> kSplits[] = {
      {&o.train_idx, "train"}, {&o.val_idx, "val"}, {&o.test_idx, "test"}};
  for (const auto& [file, name] : kSplits) {
    if (file->empty()) continue;
    ASSIGN_OR_RETURN(Array<int64_t> ids, ReadIds(*file, /*labels=*/false));
    RETURN_IF_ERROR(internal::CheckIdRange(ids, t.num_nodes, *file, "node id"));
    t.splits[name] = std::move(ids);
  }
  return g;
}

}  // namespace graphshard::partitioner
