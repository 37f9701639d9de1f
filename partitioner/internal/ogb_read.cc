#include "partitioner/internal/ogb_read.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "partitioner/internal/gz_csv.h"

namespace graphshard::partitioner::internal {

namespace fs = std::filesystem;

size_t ReserveHint(int64_t count) {
  return static_cast<size_t>(std::clamp<int64_t>(count, 0, int64_t{1} << 24));
}

// The single value of a one-line count file (num-node-list, num-edge-list).
absl::StatusOr<int64_t> ReadCount(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<int64_t> values, ReadIntColumn(path));
  if (values.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected one line (a homogeneous graph), found ", values.size()));
  }
  if (values[0] < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":1: negative count ", values[0]));
  }
  return values[0];
}

absl::Status ReadEdgeFile(const std::string& path, int64_t num_src, int64_t num_dst,
                          int64_t num_edges, std::vector<int64_t>& src, std::vector<int64_t>& dst) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  src.reserve(src.size() + ReserveHint(num_edges));
  dst.reserve(dst.size() + ReserveHint(num_edges));
  int64_t rows = 0;
  absl::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    size_t comma = line.find(',');
    int64_t s = 0, d = 0;
    if (comma == absl::string_view::npos || !ParseInt64(line.substr(0, comma), &s) ||
        !ParseInt64(line.substr(comma + 1), &d)) {
      return reader->Error(absl::StrCat("expected \"src,dst\", got \"", line.substr(0, 60), "\""));
    }
    if (s < 0 || s >= num_src) {
      return reader->Error(absl::StrCat("source ", s, " is outside [0, ", num_src, ")"));
    }
    if (d < 0 || d >= num_dst) {
      return reader->Error(absl::StrCat("target ", d, " is outside [0, ", num_dst, ")"));
    }
    src.push_back(s);
    dst.push_back(d);
    ++rows;
  }
  if (num_edges >= 0 && rows != num_edges) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", rows, " edges, num-edge-list.csv.gz says ", num_edges));
  }
  return absl::OkStatus();
}

absl::Status ReadFeatureFile(const std::string& path, int64_t num_nodes, int64_t& feat_dim,
                             std::vector<float>& features) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  int64_t rows = 0;
  absl::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (rows == num_nodes) {
      return reader->Error(absl::StrCat("more rows than the ", num_nodes, " nodes"));
    }
    int64_t cols = 0;
    size_t start = 0;
    while (true) {
      size_t comma = line.find(',', start);
      absl::string_view field = line.substr(
          start, comma == absl::string_view::npos ? absl::string_view::npos : comma - start);
      float v = 0;
      if (!ParseFloat(field, &v)) {
        return reader->Error(absl::StrCat("column ", cols + 1, ": expected a number, got \"",
                                          field.substr(0, 40), "\""));
      }
      features.push_back(v);
      ++cols;
      if (comma == absl::string_view::npos) break;
      start = comma + 1;
    }
    if (rows == 0) {
      feat_dim = cols;
      features.reserve(
          std::min(ReserveHint(num_nodes) * static_cast<size_t>(cols), ReserveHint(INT64_MAX)));
    } else if (cols != feat_dim) {
      return reader->Error(absl::StrCat("has ", cols, " columns, line 1 has ", feat_dim));
    }
    ++rows;
  }
  if (rows != num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", rows, " rows, expected one per node (", num_nodes, ")"));
  }
  return absl::OkStatus();
}

absl::Status ReadLabelFile(const std::string& path, int64_t num_nodes, std::vector<int64_t>& labels,
                           int64_t& num_classes) {
  ASSIGN_OR_RETURN(auto reader, GzLineReader::Open(path));
  labels.reserve(ReserveHint(num_nodes));
  absl::string_view line;
  int64_t max_label = -1;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (std::ssize(labels) == num_nodes) {
      return reader->Error(absl::StrCat("more rows than the ", num_nodes, " nodes"));
    }
    int64_t label = 0;
    float f = 0;
    if (!ParseInt64(line, &label)) {
      // OGB writes some labels as floats, and "nan" for unlabelled nodes.
      if (!ParseFloat(line, &f) || (!std::isnan(f) && f != std::floor(f)) || std::fabs(f) > 1e15f) {
        return reader->Error(
            absl::StrCat("expected an integer label, got \"", line.substr(0, 40), "\""));
      }
      label = std::isnan(f) ? -1 : static_cast<int64_t>(f);
    }
    if (label < 0) label = -1;
    max_label = std::max(max_label, label);
    labels.push_back(label);
  }
  if (std::ssize(labels) != num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": has ", labels.size(), " rows, expected one per node (", num_nodes, ")"));
  }
  num_classes = max_label + 1;
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
    return absl::InvalidArgumentError(absl::StrCat(
        root, ": several splits (", absl::StrJoin(found, ", "), "); choose one with --split"));
  }
  return absl::StrCat(root, "/", found[0]);
}

absl::Status ReadSplitFolder(const std::string& split_dir, int64_t num_nodes,
                             std::map<std::string, std::vector<int64_t>>& splits) {
  const std::pair<const char*, const char*> kFiles[] = {
      {"train", "train"}, {"valid", "val"}, {"test", "test"}};
  std::vector<bool> seen;
  for (const auto& [file, name] : kFiles) {
    std::string path = absl::StrCat(split_dir, "/", file, ".csv.gz");
    ASSIGN_OR_RETURN(std::vector<int64_t> ids, ReadIntColumn(path));
    seen.assign(static_cast<size_t>(num_nodes), false);
    for (size_t i = 0; i < ids.size(); ++i) {
      // ReadIntColumn rejects blank lines, so entry i is on line i + 1.
      if (ids[i] < 0 || ids[i] >= num_nodes) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", i + 1, ": node id ", ids[i], " outside [0, ", num_nodes, ")"));
      }
      if (seen[ids[i]]) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", i + 1, ": node id ", ids[i], " listed twice"));
      }
      seen[ids[i]] = true;
    }
    splits[name] = std::move(ids);
  }
  return absl::OkStatus();
}

}  // namespace graphshard::partitioner::internal
