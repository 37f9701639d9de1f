#ifndef GRAPHSHARD_COMMON_NPY_H_
#define GRAPHSHARD_COMMON_NPY_H_

// NumPy .npy files, format v1.0, little-endian, C order: the array format of the partition
// folder (readable with numpy.load(..., mmap_mode="r")). Only float32 and int64 are used.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/mapped_file.h"

namespace graphshard::common {

enum class DType { kFloat32, kInt64 };

// "float32" / "int64": the names used in the manifest.
absl::string_view DTypeName(DType dtype);
// InvalidArgument for any other name.
absl::StatusOr<DType> ParseDTypeName(absl::string_view name);
size_t DTypeSize(DType dtype);

template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <>
constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }

struct NpyHeader {
  DType dtype = DType::kInt64;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // bytes from the start of the file
  int64_t NumElements() const;
};

// Whether every dim of `shape` is >= 0 and the array's bytes (`elem_size` each) fit in an
// int64_t; shapes come from files and manifests, so NumElements() and byte counts are computed
// only for shapes that pass this.
bool ShapeFits(absl::Span<const int64_t> shape, size_t elem_size);

// Parses the header at the start of `file`; DataLoss (bad magic, version, dict, Fortran order,
// big-endian, unsupported dtype) naming `path`.
absl::StatusOr<NpyHeader> ParseNpyHeader(absl::Span<const char> file, const std::string& path);

// The header bytes (magic through the padded dict) of an array; its length is a multiple of 64.
std::string EncodeNpyHeader(DType dtype, absl::Span<const int64_t> shape);

// An mmap'ed .npy file. Copyable (shares the mapping); thread-safe (immutable).
class NpyFile {
 public:
  // NotFound if missing; DataLoss if the header is bad or the data is shorter than the shape
  // says ("truncated"); every message names the path.
  static absl::StatusOr<NpyFile> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  const NpyHeader& header() const { return header_; }
  absl::Span<const char> file_bytes() const { return file_->bytes(); }

  // The values as T; InvalidArgument naming the file if the dtype is not T's.
  template <typename T>
  absl::StatusOr<absl::Span<const T>> Values() const;

 private:
  NpyFile(std::shared_ptr<const MappedFile> file, NpyHeader header)
      : file_(std::move(file)), header_(std::move(header)) {}
  absl::Status CheckDType(DType want) const;
  std::shared_ptr<const MappedFile> file_;
  NpyHeader header_;
};

template <typename T>
absl::StatusOr<absl::Span<const T>> NpyFile::Values() const {
  absl::Status s = CheckDType(DTypeOf<T>());
  if (!s.ok()) return s;
  const char* data = file_->bytes().data() + header_.data_offset;
  return absl::Span<const T>(reinterpret_cast<const T*>(data),
                             static_cast<size_t>(header_.NumElements()));
}

// Writes an .npy file piece by piece (arrays larger than memory can be streamed), keeping a
// CRC-32 of every byte written. Not thread-safe. Internal on I/O errors, naming the path.
class NpyWriter {
 public:
  static absl::StatusOr<std::unique_ptr<NpyWriter>> Create(const std::string& path, DType dtype,
                                                           std::vector<int64_t> shape);
  ~NpyWriter();
  absl::Status Append(absl::Span<const char> bytes);
  template <typename T>
  absl::Status AppendValues(absl::Span<const T> values) {
    return Append({reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)});
  }
  // Checks that exactly the shape's bytes were written, flushes and closes; returns the CRC-32.
  absl::StatusOr<uint32_t> Finish();

 private:
  NpyWriter(std::string path, std::FILE* f, uint64_t expected_bytes, uint32_t crc)
      : path_(std::move(path)), file_(f), expected_bytes_(expected_bytes), crc_(crc) {}
  std::string path_;
  std::FILE* file_;
  uint64_t expected_bytes_;
  uint64_t written_bytes_ = 0;
  uint32_t crc_;
};

// Convenience: a whole array at once. Returns the file's CRC-32.
template <typename T>
absl::StatusOr<uint32_t> WriteNpy(const std::string& path, std::vector<int64_t> shape,
                                  absl::Span<const T> values) {
  auto writer = NpyWriter::Create(path, DTypeOf<T>(), std::move(shape));
  if (!writer.ok()) return writer.status();
  absl::Status s = (*writer)->AppendValues(values);
  if (!s.ok()) return s;
  return (*writer)->Finish();
}

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_NPY_H_
