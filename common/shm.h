#ifndef GRAPHSHARD_COMMON_SHM_H_
#define GRAPHSHARD_COMMON_SHM_H_

// POSIX shared-memory segments for the same-host batch path: the server creates one segment per
// minibatch and writes the arrays into it; the trainer maps it, unlinks the name at once (the
// mapping stays valid until the last unmap) and reads the arrays in place.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace graphshard::common {

// A mapped segment; unmapped on destruction. Not thread-safe for writers.
class ShmSegment {
 public:
  // Creates `name` (which starts with '/') of `size` bytes, exclusive, mapped read-write.
  // Internal naming the segment on failure.
  static absl::StatusOr<std::unique_ptr<ShmSegment>> Create(const std::string& name, size_t size);
  // Maps an existing segment read-only and unlinks its name. NotFound if it does not exist,
  // DataLoss if it is smaller than `size`.
  static absl::StatusOr<std::shared_ptr<const ShmSegment>> OpenAndUnlink(const std::string& name,
                                                                         size_t size);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  const std::string& name() const { return name_; }
  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  ShmSegment(std::string name, char* data, size_t size)
      : name_(std::move(name)), data_(data), size_(size) {}
  std::string name_;
  char* data_;
  size_t size_;
};

// Removes a segment name (ignores a missing one).
void UnlinkShm(const std::string& name);

// A segment name prefix unique to one server instance: "/graphshard-<pid>-<nonce>-".
std::string NewShmPrefix();
// Removes the segments named with `own_prefix`, and those of graphshard processes that no longer
// exist (left behind by a crash). Best effort.
void RemoveOwnAndStaleShm(const std::string& own_prefix);

// An id equal for processes on the same host (kernel boot id + hostname), so that a server can
// tell that a client may map its shared memory.
std::string HostId();

}  // namespace graphshard::common

#endif  // GRAPHSHARD_COMMON_SHM_H_
