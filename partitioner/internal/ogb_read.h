#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_OGB_READ_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_OGB_READ_H_

// Readers of the files of OGB's raw layout, shared by the homogeneous and heterogeneous
// readers. Errors name the file and, for bad content, the 1-based line: NotFound (missing
// file), InvalidArgument (bad number, id out of range, wrong row or column count).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace graphshard::partitioner::internal {

// Counts come from the files; a bogus huge one must not turn into a huge allocation before
// the rows themselves disagree with it.
size_t ReserveHint(int64_t count);

// The single non-negative value of a one-line count file (num-node-list, num-edge-list).
absl::StatusOr<int64_t> ReadCount(const std::string& path);

// "src,dst" rows; src in [0, num_src), dst in [0, num_dst); exactly num_edges rows (or any
// number if num_edges < 0). Appends to src / dst.
absl::Status ReadEdgeFile(const std::string& path, int64_t num_src, int64_t num_dst,
                          int64_t num_edges, std::vector<int64_t>& src, std::vector<int64_t>& dst);

// One row of comma-separated floats per node, all rows the same length.
absl::Status ReadFeatureFile(const std::string& path, int64_t num_nodes, int64_t& feat_dim,
                             std::vector<float>& features);

// One label per node: an integer, a float with an integral value, or "nan"; negative or nan
// become -1. num_classes = 1 + the largest label.
absl::Status ReadLabelFile(const std::string& path, int64_t num_nodes, std::vector<int64_t>& labels,
                           int64_t& num_classes);

// <dir>/split/<name>, or the only folder under <dir>/split when name is empty.
absl::StatusOr<std::string> FindSplitDir(const std::string& dir, const std::string& name);

// <split_dir>/{train,valid,test}.csv.gz -> splits "train", "val", "test"; ids distinct and in
// [0, num_nodes).
absl::Status ReadSplitFolder(const std::string& split_dir, int64_t num_nodes,
                             std::map<std::string, std::vector<int64_t>>& splits);

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_OGB_READ_H_
