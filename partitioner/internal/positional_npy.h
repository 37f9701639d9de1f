#ifndef GRAPHSHARD_PARTITIONER_INTERNAL_POSITIONAL_NPY_H_
#define GRAPHSHARD_PARTITIONER_INTERNAL_POSITIONAL_NPY_H_

// An .npy file of known shape whose values are written at any element offset, from any number
// of threads at once (pwrite), so that workers fill disjoint ranges in parallel.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/npy.h"

namespace graphshard::partitioner::internal {

class PositionalNpy {
 public:
  // Creates (truncates) `path` with the header and the full data size. Internal on I/O errors,
  // naming the path.
  static absl::StatusOr<PositionalNpy> Create(const std::string& path, common::DType dtype,
                                              std::vector<int64_t> shape);
  PositionalNpy(PositionalNpy&& other) noexcept;
  PositionalNpy& operator=(PositionalNpy&&) = delete;
  ~PositionalNpy();

  // Writes `values` at element `offset` (row-major over the shape). Thread-safe for any ranges.
  // Internal (naming the path and the errno text: a full disk is ENOSPC) on failure,
  // InvalidArgument past the end.
  template <typename T>
  absl::Status WriteAt(int64_t offset, absl::Span<const T> values) const {
    return WriteBytes(offset * static_cast<int64_t>(sizeof(T)),
                      reinterpret_cast<const char*>(values.data()),
                      static_cast<int64_t>(values.size() * sizeof(T)));
  }
  // fsync and close; Internal on failure.
  absl::Status Close();
  const std::string& path() const { return path_; }

 private:
  PositionalNpy(std::string path, int fd, int64_t data_offset, int64_t data_bytes)
      : path_(std::move(path)), fd_(fd), data_offset_(data_offset), data_bytes_(data_bytes) {}
  absl::Status WriteBytes(int64_t at, const char* data, int64_t n) const;

  std::string path_;
  int fd_ = -1;
  int64_t data_offset_ = 0;
  int64_t data_bytes_ = 0;
};

}  // namespace graphshard::partitioner::internal

#endif  // GRAPHSHARD_PARTITIONER_INTERNAL_POSITIONAL_NPY_H_
