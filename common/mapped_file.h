#ifndef GRAPHSHARD_COMMON_MAPPED_FILE_H_
#define GRAPHSHARD_COMMON_MAPPED_FILE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace graphshard::common {

// A read-only mmap of a whole file. Thread-safe (immutable). The mapping lives as long as the
// last shared_ptr to it.
class MappedFile {
 public:
  // NotFound if the file does not exist; Internal on other OS errors. Messages name the path.
  static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  absl::Span<const char> bytes() const { return {data_, size_}; }

 private:
  MappedFile(std::string path, const char* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const char* data_;
  size_t size_;
};

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_MAPPED_FILE_H_
