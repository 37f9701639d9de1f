#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_NPY_ARRAYS_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_NPY_ARRAYS_H_

// Input .npy files as mmap'ed Arrays, and range checks that name the file and the index.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/npy.h"
#include "partitioner/graph.h"

namespace graphshard::partitioner::internal {

template <typename T>
struct NpyArray {
  Array<T> values;
  int64_t rows = 0;
  int64_t cols = 1;
};

// rank 1: shape [n] (cols 1) or [n, k]; rank 2: shape [r, c] exactly. DataLoss for a bad
// header, InvalidArgument for another dtype or rank, NotFound if missing; all name the path.
template <typename T>
absl::StatusOr<NpyArray<T>> MapNpy(const std::string& path, int rank) {
  auto file = common::NpyFile::Open(path);
  if (!file.ok()) return file.status();
  auto values = file->Values<T>();
  if (!values.ok()) return values.status();
  const std::vector<int64_t>& shape = file->header().shape;
  NpyArray<T> out;
  if (shape.size() == 2) {
    out.rows = shape[0];
    out.cols = shape[1];
  } else if (shape.size() == 1 && rank == 1) {
    out.rows = shape[0];
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", shape.size(), " dimensions, expected ", rank));
  }
  auto keep = std::make_shared<common::NpyFile>(*std::move(file));
  out.values = Array<T>::Mapped(std::move(keep), *values);
  return out;
}

// InvalidArgument "<path>: index i: <what> v is outside [0, n)" for the first bad id.
absl::Status CheckIdRange(const Array<int64_t>& ids, int64_t n, const std::string& path,
                          absl::string_view what);
// Same for both ends of every edge ("column e: source ...").
absl::Status CheckEdgeRange(const EdgeTypeData& e, int64_t num_src, int64_t num_dst,
                            const std::string& path);
// The largest id at either end (-1 without edges); InvalidArgument for a negative one.
absl::StatusOr<int64_t> MaxId(const EdgeTypeData& e, const std::string& path);

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_NPY_ARRAYS_H_
